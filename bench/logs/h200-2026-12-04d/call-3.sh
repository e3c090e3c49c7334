#!/usr/bin/env bash
# Device call of 2026-12-04, fourth session: which half of call 2's change lost. Decode of
# both models (the larger at depths 0 and 4096, exact), twice, interleaved: this commit
# (a tile's loads at once, the first before the prologue; combine's loads before its
# reductions), fce10a7 (neither), 55dc05d (the new attend, the old combine), 4615ac3 (the old
# attend, the new combine), c233d42 (the new attend without loading before the prologue).
cd "$(dirname "$0")/../../.."  # the repository root
b=bin:.wgpu-carry/dory
BUDGET=420 SWEEP_DEPTHS="0 4096" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults ${b}-fce10a7 ${b}-55dc05d ${b}-4615ac3 ${b}-c233d42 defaults ${b}-fce10a7 ${b}-55dc05d ${b}-4615ac3 ${b}-c233d42" \
    bash bench/wgpu_h200.sh run sweep
