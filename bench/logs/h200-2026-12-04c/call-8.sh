#!/usr/bin/env bash
# Device call of 2026-12-04, third session: the final commit's larger config at depth 32768,
# exact attention (the bars' third depth, which call 3's `run quick` does not run).
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=200 SWEEP_DEPTHS="32768" SWEEP_ARGS="--attention exact" SWEEP="defaults" \
    bash bench/wgpu_h200.sh run sweep
