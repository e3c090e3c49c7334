#!/usr/bin/env bash
# First device call of the sixth session of 2026-12-04. Build with `bench/wgpu_h200.sh build
# 50e36a6` and carry .gl and .wgpu-carry.
# 1. The GPU tests; their third device runs a prompt's attention on the tensor cores, now
#    reading every operand from a buffer (attend_coop.wgsl rewritten, kv_parts new).
# 2. `dory bench` with the tensor-core attention (DORY_WGPU_ATTEND_COOP=1) against the
#    defaults, interleaved twice, depths 0 and 4096, exact; the 4096 prompt profiled by kernel.
# 3. The last session's unmeasured call (h200-2026-12-04e/call-2.sh, its parts 3): `dory
#    generate` on dory-tiny under its own exit rule (default sampling and greedy) and with all
#    passes, and the larger config greedy, against 50e36a6.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b $o/c $o/d
old=.wgpu-carry/dory-50e36a6
OUT=$o/a BUDGET=330 SWEEP_TESTS=1 SWEEP_DEPTHS="0 4096" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults DORY_WGPU_ATTEND_COOP=1 defaults DORY_WGPU_ATTEND_COOP=1" \
    bash bench/wgpu_h200.sh run sweep
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DORY_REPO=$PWD
for coop in 0 1; do
    echo "== DORY_WGPU_ATTEND_COOP=$coop: larger, pp512 at 4096" >> $o/a/profile.txt
    DORY_WGPU_ATTEND_COOP=$coop DORY_WGPU_PROFILE=1 timeout 60 .wgpu-carry/dory bench --backend wgpu \
        --model /tmp/wgpu-large --depth 4096 --reps 1 --prompt 512 --gen 0 --exit none --attention exact \
        2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
OUT=$o/b MODEL=models/dory-tiny BINARIES="old=$old new=.wgpu-carry/dory" \
    ARGS="--backend wgpu" TOKENS=1024 timeout 90 bash bench/generate_speed.sh 3
OUT=$o/c MODEL=models/dory-tiny BINARIES="old=$old new=.wgpu-carry/dory" SAMPLINGS=greedy \
    ARGS="--backend wgpu --exit none" TOKENS=1024 timeout 60 bash bench/generate_speed.sh 3
OUT=$o/d MODEL=/tmp/wgpu-large BINARIES="old=$old new=.wgpu-carry/dory" SAMPLINGS=greedy \
    ARGS="--backend wgpu --attention exact" TOKENS=384 timeout 90 bash bench/generate_speed.sh 3
