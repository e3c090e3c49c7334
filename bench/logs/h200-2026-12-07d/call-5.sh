#!/usr/bin/env bash
# 2026-12-07, twenty-first session, call 5: main at 9a8e3f2 (a prompt's rows scored four
# keys an invocation): every GPU test, then issue 9's figures (bench/device_setup.sh's
# `figures`: the larger config at depths 0, 4096 and 32768 (O(1)), dory-tiny with all passes
# and under its rule, and the PyTorch peer).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
figures
