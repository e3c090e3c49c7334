#!/usr/bin/env bash
# Device call of 2026-12-04, second session: attend's value sums eight keys' loads at a
# time, and the tails of its key and value loops loaded at once (dory-tiny's 48-dim heads
# walked their keys' pieces and their last values one round trip each). The GPU tests, then
# decode of both models at depth 0 under this binary and the last commit's (936dffb),
# three times each, interleaved.
cd "$(dirname "$0")/../../.."  # the repository root
old=bin:.wgpu-carry/dory-936dffb
BUDGET=200 SWEEP_TESTS=1 SWEEP_DEPTHS="0" SWEEP="defaults $old defaults $old defaults $old" \
    bash bench/wgpu_h200.sh run sweep
