#!/usr/bin/env bash
# Device call of 2026-12-04, fifth session: the GPU tests with a greedy decoder's next step
# chosen and embedded on the device and run before its logits' read (a73a7cc); `dory bench`
# (greedy) of it against 44d83ba (the embedding held) and the last stop's 50e36a6,
# interleaved twice; then `dory generate` greedy, a73a7cc against 50e36a6.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b $o/c
old=.wgpu-carry/dory-50e36a6
mid=.wgpu-carry/dory-44d83ba
OUT=$o/a BUDGET=330 SWEEP_TESTS=1 SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults bin:$mid bin:$old defaults bin:$mid bin:$old" \
    bash bench/wgpu_h200.sh run sweep
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DORY_REPO=$PWD
OUT=$o/b MODEL=models/dory-tiny BINARIES="old=$old new=.wgpu-carry/dory" SAMPLINGS=greedy \
    ARGS="--backend wgpu --exit none" TOKENS=1024 timeout 60 bash bench/generate_speed.sh 3
OUT=$o/c MODEL=/tmp/wgpu-large BINARIES="old=$old new=.wgpu-carry/dory" SAMPLINGS=greedy \
    ARGS="--backend wgpu --attention exact" TOKENS=384 timeout 90 bash bench/generate_speed.sh 3
