#!/usr/bin/env bash
# Device call planned in the fifth session of 2026-12-04 and not run (no device was lent for a
# second call): the next session's first. Build with `bench/wgpu_h200.sh build 50e36a6` (the
# last stop's binary beside this one) and carry .gl and .wgpu-carry.
# 1. The GPU tests, with a greedy decoder's next step chosen and embedded on the device
#    (a73a7cc) and an untested read-out kept on the device (KL's first).
# 2. `dory bench` (greedy, all passes) against 50e36a6, interleaved twice, depth 0.
# 3. `dory generate` on dory-tiny under its own exit rule (kl:0.05), default sampling and
#    greedy, and with all passes, against 50e36a6; the larger config greedy.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b $o/c $o/d
old=.wgpu-carry/dory-50e36a6
OUT=$o/a BUDGET=300 SWEEP_TESTS=1 SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults bin:$old defaults bin:$old" \
    bash bench/wgpu_h200.sh run sweep
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DORY_REPO=$PWD
OUT=$o/b MODEL=models/dory-tiny BINARIES="old=$old new=.wgpu-carry/dory" \
    ARGS="--backend wgpu" TOKENS=1024 timeout 90 bash bench/generate_speed.sh 3
OUT=$o/c MODEL=models/dory-tiny BINARIES="old=$old new=.wgpu-carry/dory" SAMPLINGS=greedy \
    ARGS="--backend wgpu --exit none" TOKENS=1024 timeout 60 bash bench/generate_speed.sh 3
OUT=$o/d MODEL=/tmp/wgpu-large BINARIES="old=$old new=.wgpu-carry/dory" SAMPLINGS=greedy \
    ARGS="--backend wgpu --attention exact" TOKENS=384 timeout 90 bash bench/generate_speed.sh 3
