#!/usr/bin/env bash
# Second device call of the sixth session of 2026-12-04. Build with `bench/wgpu_h200.sh build
# 50e36a6` and carry .gl and .wgpu-carry.
# 1. The GPU tests; their third device runs attend_coop.wgsl, now reading its operands in
#    16 × 16 tiles (keys, values, queries), its weights through the buffer.
# 2. `dory bench`: the defaults, the tensor-core attention, and 50e36a6, interleaved twice,
#    depths 0 and 4096, exact (a read now waits for its own submission only, not for a greedy
#    decoder's next step submitted after it); the 4096 prompt profiled by kernel.
# 3. `dory generate`, greedy, dory-tiny (all passes) and the larger config, against 50e36a6.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/c $o/d
old=.wgpu-carry/dory-50e36a6
OUT=$o/a BUDGET=330 SWEEP_TESTS=1 SWEEP_DEPTHS="0 4096" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults DORY_WGPU_ATTEND_COOP=1 bin:$old defaults DORY_WGPU_ATTEND_COOP=1 bin:$old" \
    bash bench/wgpu_h200.sh run sweep
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DORY_REPO=$PWD
for coop in 0 1; do
    echo "== DORY_WGPU_ATTEND_COOP=$coop: larger, pp512 at 4096" >> $o/a/profile.txt
    DORY_WGPU_ATTEND_COOP=$coop DORY_WGPU_PROFILE=1 timeout 60 .wgpu-carry/dory bench --backend wgpu \
        --model /tmp/wgpu-large --depth 4096 --reps 1 --prompt 512 --gen 0 --exit none --attention exact \
        2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
OUT=$o/c MODEL=models/dory-tiny BINARIES="old=$old new=.wgpu-carry/dory" SAMPLINGS=greedy \
    ARGS="--backend wgpu --exit none" TOKENS=1024 timeout 60 bash bench/generate_speed.sh 3
OUT=$o/d MODEL=/tmp/wgpu-large BINARIES="old=$old new=.wgpu-carry/dory" SAMPLINGS=greedy \
    ARGS="--backend wgpu --attention exact" TOKENS=384 timeout 90 bash bench/generate_speed.sh 3
