#!/usr/bin/env bash
# Device call of 2026-12-04, fourth session: the larger config at depth 32768, exact (the
# bars' third depth, which `run quick` does not run), this commit and the last stop's.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=250 SWEEP_DEPTHS="32768" SWEEP_ARGS="--attention exact" SWEEP="defaults bin:.wgpu-carry/dory-7673510" \
    bash bench/wgpu_h200.sh run sweep
