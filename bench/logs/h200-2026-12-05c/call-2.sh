#!/usr/bin/env bash
# Written 2026-12-05 (fourth session), when no device was lent; the next session's second
# call, on call-1.sh's build (`bench/wgpu_h200.sh build e2a9afb`, carry .gl and .wgpu-carry).
# join.wgsl rewritten (a decoded row's chunks joined by up to 8 lanes a (head, dim), four
# chunks' loads at a time, as an online softmax): dory-tiny's decode, whose out projection
# joins its chunks on the way in (gemv_combine: ~10 of its 15.2 µs), and the larger
# config's pp512 at depths 0 and 4096 (split_combine), against e2a9afb, interleaved; then
# both profiled.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
source bench/device_setup.sh
old=.wgpu-carry/dory-e2a9afb
large=/tmp/wgpu-large
[ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
mkdir -p $o/c
for round in 1 2 3; do
    for bin in $dory $old; do
        timeout 40 $bin bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 --gen 128 --attention exact \
            --exit none --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$bin |" | tee -a $o/c/join.jsonl
    done
done
for round in 1 2; do
    for bin in $dory $old; do
        for depth in 0 4096; do
            timeout 60 $bin bench --backend wgpu --model $large --depth $depth --reps 2 --prompt 512 --gen 0 \
                --attention exact --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$bin |" | tee -a $o/c/join.jsonl
        done
    done
done
for bin in $dory $old; do
    echo "== $bin" >> $o/c/join_profiles.txt
    DORY_WGPU_PROFILE=1 timeout 40 $bin bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 --gen 128 \
        --attention exact --exit none 2>&1 | grep -v XDG_RUNTIME >> $o/c/join_profiles.txt
    DORY_WGPU_PROFILE=1 timeout 60 $bin bench --backend wgpu --model $large --depth 4096 --reps 1 --prompt 512 --gen 0 \
        --attention exact 2>&1 | grep -v XDG_RUNTIME | grep -E 'pp512|split|attend|gemm' >> $o/c/join_profiles.txt
done
cat $o/c/join_profiles.txt
