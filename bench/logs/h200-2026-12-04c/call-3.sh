#!/usr/bin/env bash
# Device call of 2026-12-04, third session: `run quick` of this stop's commit (the engine's
# kernels are eb02d1b's; the floors gain the chain of a token's stages that only stream
# their bytes, as a dispatch a stage and as one dispatch of 264 workgroups meeting at
# barriers in memory, for both models): the GPU tests, the floors, both models' decode and
# prefill, PyTorch at depth 0.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=450 bash bench/wgpu_h200.sh run quick
