#!/usr/bin/env bash
# Device call of 2026-12-04, second session: the final kernels (3b55292's binary) at depth
# 32768, exact attention, for the closing figures.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=200 SWEEP="defaults" SWEEP_DEPTHS="32768" SWEEP_ARGS="--attention exact" bash bench/wgpu_h200.sh run sweep
