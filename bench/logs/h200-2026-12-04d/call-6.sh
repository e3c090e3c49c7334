#!/usr/bin/env bash
# Device call of 2026-12-04, fourth session: call 2's change again with every round of loads
# in named vec4s (the driver keeps an array indexed in a loop in memory, which call 3
# suggests is why that change lost): a decoded row's attention loading a tile's keys and
# values at once (the first tile's before the prologue), combine's loads before its first
# reduction; the GPU tests first, then decode against bdd3adc (the kernels as they are),
# interleaved three times.
cd "$(dirname "$0")/../../.."  # the repository root
BUDGET=420 SWEEP_TESTS=1 SWEEP_DEPTHS="0 4096" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults bin:.wgpu-carry/dory-bdd3adc defaults bin:.wgpu-carry/dory-bdd3adc defaults bin:.wgpu-carry/dory-bdd3adc" \
    bash bench/wgpu_h200.sh run sweep
