#!/usr/bin/env bash
# Device call of 2026-12-03 (ninth session): `run quick` of 8071c42 (the GEMM's scratch
# buffers through one helper; gemm_staged out again), 9f80ef3 (the last stop) carried beside
# it, then the larger config at depth 32768 (exact), which the last stop did not rerun.
cd "$(dirname "$0")/../../.."  # the repository root
FLOORS=none BUDGET=330 bash bench/wgpu_h200.sh run quick
BUDGET=120 SWEEP="defaults" SWEEP_DEPTHS="32768" SWEEP_ARGS="--attention exact" bash bench/wgpu_h200.sh run sweep
