#!/usr/bin/env bash
# A prompt's attention on the tensor cores, rewritten (attend_coop.wgsl: one subgroup a
# block of 4 rows, every operand read from a buffer, the value sums held in accumulators
# through the chunk; kv_parts.wgsl cuts the keys and values into f16 parts first): the GPU
# tests (the third test device runs it), then pp512 of the larger config at depths 0 and
# 4096 and of dory-tiny, exact, with it (DORY_WGPU_ATTEND_COOP=1) and without, interleaved,
# and the GPU's time by kernel of the larger pp512 at 4096 under both.
# Build: `bench/wgpu_h200.sh build`, carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
for f in .wgpu-carry/*.gz; do [ -e "$f" ] && gunzip -f "$f" && chmod +x "${f%.gz}"; done
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DORY_REPO=$PWD
dory=.wgpu-carry/dory
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -30
large=/tmp/wgpu-large
[ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for round in 1 2; do
    for coop in 0 1; do
        for run in "$large 0 2" "$large 4096 1" "models/dory-tiny 0 3"; do
            set -- $run
            DORY_WGPU_ATTEND_COOP=$coop timeout 60 $dory bench --backend wgpu --model $1 --depth $2 --reps $3 \
                --prompt 512 --gen 0 --attention exact --json 2>&1 | grep -v XDG_RUNTIME \
                | sed "s/^/coop=$coop /" | tee -a $o/a/bench.jsonl
        done
    done
done
for coop in 0 1; do
    echo "== DORY_WGPU_ATTEND_COOP=$coop" >> $o/a/profile.txt
    DORY_WGPU_ATTEND_COOP=$coop DORY_WGPU_PROFILE=1 timeout 60 $dory bench --backend wgpu --model $large --depth 4096 \
        --reps 1 --prompt 512 --gen 0 --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
