#!/usr/bin/env bash
# After call-3 (the same build and machine, an H100): the join's rewrite on the larger
# config's prompt (split.wgsl's join, depth 4096) and depth 0, against e2a9afb; then
# dory-tiny's exit paths again (none, the device, the host), twice more, interleaved.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/c
source bench/device_setup.sh
old=.wgpu-carry/dory-e2a9afb
large=/tmp/wgpu-large
[ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for round in 1 2; do
    for bin in $dory $old; do
        for depth in 4096 0; do
            timeout 60 $bin bench --backend wgpu --model $large --depth $depth --reps 2 --prompt 512 --gen 0 \
                --attention exact --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$bin |" | tee -a $o/c/join.jsonl
        done
    done
done
for round in 1 2; do
    for e in none:device kl:0.05:device kl:0.05:host; do
        DORY_WGPU_EXIT=${e##*:} timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 \
            --gen 128 --attention exact --exit ${e%:*} --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$e |" \
            | tee -a $o/c/exit.jsonl
    done
done
