#!/usr/bin/env bash
# Device call of 2026-12-04, second session: a decoded row's attention with its first
# tile's keys and values loaded before the prologue waits, and combine with everything it
# reads first loaded before its first reduction (this stop's kernels), against the last
# stop's binary (ac7d052: a6e3b4e's kernels). The GPU tests, then decode of both models at
# depths 0 and 4096, three times each, interleaved; the larger model's decode at depth 0
# profiled under each.
cd "$(dirname "$0")/../../.."  # the repository root
old=bin:.wgpu-carry/dory-ac7d052
BUDGET=420 SWEEP_TESTS=1 SWEEP_DEPTHS="0 4096" SWEEP_PROFILE="large,decode,0" \
    SWEEP="defaults $old defaults $old defaults $old" \
    bash bench/wgpu_h200.sh run sweep
