#!/usr/bin/env bash
# Device call of 2026-12-04, third session: the floors of both models again, now with the
# MLP probe (mlp_fused.wgsl) also run with m coherent, as a one-dispatch kernel whose
# workgroups hand each other data must declare it on the H200 (calls 1-2): does the probe's
# gain over two dispatches survive L1-bypassing loads of m?
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=240 bash bench/wgpu_h200.sh run floors
