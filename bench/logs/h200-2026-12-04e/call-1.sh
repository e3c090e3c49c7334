#!/usr/bin/env bash
# Device call of 2026-12-04, fifth session: the GPU tests with a decoded token's embedding
# recorded among its held ops (44d83ba); `dory bench`'s greedy decode of it against the last
# stop's binary (50e36a6), interleaved; then what `dory generate` users get, the default
# sampler (top-k now kept in one pass, 5c7d740) and greedy, both binaries, both models.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b $o/c
old=.wgpu-carry/dory-50e36a6
OUT=$o/a BUDGET=280 SWEEP_TESTS=1 SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults bin:$old defaults bin:$old" \
    bash bench/wgpu_h200.sh run sweep
# What wgpu_h200.sh sets up for itself (the binaries are unpacked by now).
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DORY_REPO=$PWD
OUT=$o/b MODEL=models/dory-tiny BINARIES="old=$old new=.wgpu-carry/dory" ARGS="--backend wgpu --exit none" \
    TOKENS=1024 timeout 100 bash bench/generate_speed.sh 3
OUT=$o/c MODEL=/tmp/wgpu-large BINARIES="old=$old new=.wgpu-carry/dory" ARGS="--backend wgpu --attention exact" \
    TOKENS=384 timeout 150 bash bench/generate_speed.sh 3
