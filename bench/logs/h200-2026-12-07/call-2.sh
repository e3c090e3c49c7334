#!/usr/bin/env bash
# 2026-12-07, eighteenth session, call 2 (not run: no device time left): issue 9's figures with
# main's binary, in order of need so that a call cut short keeps the most: the larger
# config's pp512 + tg64 at depth 0, dory-tiny's pp512 + tg128 (all passes and its exit rule),
# the larger config at 4096 (exact), the PyTorch peer, the larger config at 32768 (O(1)).
# Built with `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
figures
