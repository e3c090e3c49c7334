#!/usr/bin/env bash
# Device call of 2026-12-04, fourth session: `run quick` of this stop's commit (a prompt's
# blocks at 256 keys a chunk at least; the benchmark's warm-up of half a second; decode
# kernels as the last stop's), with the last stop's binary (7673510) carried for the A/B:
# the GPU tests, the floors, both models' decode and prefill, PyTorch at depth 0.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=450 bash bench/wgpu_h200.sh run quick
