#!/usr/bin/env bash
# Run on the same warm machine: issue 9's figures with this stop's binary.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh; figures
