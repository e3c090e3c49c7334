#!/usr/bin/env bash
# q8_0 prompts on the tensor cores (an f16 copy of each slice of rows, [hi | lo], against x
# cut twice side by side): the GPU tests (the projections of 9, 64 and 70 q8_0 rows take it,
# on the third device in slices of 64 rows; a whole q8_0 model), also with 2 × 2 GEMM
# subgroups; then pp512 of the larger config and of dory-tiny as q8_0, on the tensor cores
# and on the plain GEMM (DORY_WGPU_Q8_COOP=0), and f16 / bf16, interleaved twice; the GPU's
# time by kernel of one q8_0 pp512 each way. Build: `bench/wgpu_h200.sh build`, carry .gl
# and .wgpu-carry.
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
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log
CI=true DORY_WGPU_COOP_TILE=2,2 timeout 90 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME \
    > $o/a/wgpu_tests_tile.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests_tile.log
large=/tmp/wgpu-large
timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
timeout 120 $dory quantize --model $large --out /tmp/wgpu-large-q8 > /dev/null
timeout 60 $dory quantize --model models/dory-tiny --out /tmp/tiny-q8 > /dev/null
for round in 1 2; do
    for m in "/tmp/wgpu-large-q8 1" "/tmp/wgpu-large-q8 0" "$large 1" "/tmp/tiny-q8 1" "/tmp/tiny-q8 0" "models/dory-tiny 1"; do
        set -- $m
        DORY_WGPU_Q8_COOP=$2 timeout 60 $dory bench --backend wgpu --model $1 --reps 3 --prompt 512 --gen 16 \
            --exit none --attention exact --json 2>&1 | grep -v XDG_RUNTIME \
            | sed "s/\"attention\":\"exact\"/\"attention\":\"exact, q8 coop $2\"/" | tee -a $o/a/bench.jsonl
    done
done
for coop in 1 0; do
    echo "== q8_0 pp512, DORY_WGPU_Q8_COOP=$coop" >> $o/a/profile.txt
    DORY_WGPU_Q8_COOP=$coop DORY_WGPU_PROFILE=1 timeout 60 $dory bench --backend wgpu --model /tmp/wgpu-large-q8 \
        --reps 1 --prompt 512 --gen 0 --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
