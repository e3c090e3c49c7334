#!/usr/bin/env bash
# q8_0 on the GPU (new, 46af3e0): the larger config (f16 as `bench/wgpu_h200.sh` makes it)
# and dory-tiny (bf16) against their q8_0 copies (`dory quantize`), decode and pp512 at
# depth 0, exact, interleaved twice; the plain GEMM's wide tiles; then the GPU's time by
# kernel in each q8_0 decode. Same build as call-1.sh; the GPU tests of call 1 run the
# q8_0 legs on the H200.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
for f in .wgpu-carry/*.gz; do [ -e "$f" ] && gunzip -f "$f" && chmod +x "${f%.gz}"; done
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
dory=.wgpu-carry/dory
large=/tmp/wgpu-large
[ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
timeout 120 $dory quantize --model $large --out /tmp/wgpu-large-q8 | tee $o/a/quantize.txt
timeout 60 $dory quantize --model models/dory-tiny --out /tmp/tiny-q8 | tee -a $o/a/quantize.txt
for round in 1 2; do
    for m in $large /tmp/wgpu-large-q8; do
        timeout 60 $dory bench --backend wgpu --model $m --reps 2 --prompt 512 --gen 32 --attention exact --json \
            2>&1 | grep -v XDG_RUNTIME | tee -a $o/a/bench.jsonl
    done
    for m in models/dory-tiny /tmp/tiny-q8; do
        timeout 60 $dory bench --backend wgpu --model $m --reps 3 --prompt 512 --gen 128 --exit none \
            --attention exact --json 2>&1 | grep -v XDG_RUNTIME | tee -a $o/a/bench.jsonl
    done
done
# The plain GEMM in wide tiles (DORY_WGPU_GEMM_WIDE=1), which q8_0 prompts take (and f16
# ones without the tensor cores: DORY_WGPU_COOP=0): pp512 alone, each way, twice.
for round in 1 2; do
    for wide in 0 1; do
        for m in "/tmp/wgpu-large-q8" "/tmp/tiny-q8" "$large DORY_WGPU_COOP=0"; do
            set -- $m
            env ${2:-} DORY_WGPU_GEMM_WIDE=$wide timeout 60 $dory bench --backend wgpu --model $1 --reps 2 \
                --prompt 512 --gen 0 --attention exact --json 2>&1 | grep -v XDG_RUNTIME \
                | sed "s/\"attention\":\"exact\"/\"attention\":\"exact, wide $wide ${2:-}\"/" | tee -a $o/a/wide.jsonl
        done
    done
done
for m in "/tmp/wgpu-large-q8 32" "/tmp/tiny-q8 128"; do
    set -- $m
    echo "== $1" >> $o/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 40 $dory bench --backend wgpu --model $1 --reps 1 --prompt 1 --gen $2 \
        --exit none --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
