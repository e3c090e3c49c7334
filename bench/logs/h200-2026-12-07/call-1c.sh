#!/usr/bin/env bash
# 2026-12-07, eighteenth session, call 1c: run right after call-1b on the same warm H100
# (the command as sent, made a script). Call 1b had no binary without the read's deferral,
# so this times the parts alone: 2aa0000's binary (parts, two submissions a token) in one
# part and in parts of 32, three rounds of dory-tiny under its rule, one of all passes, and
# the host's time by phase under each.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
b=.wgpu-carry/dory-2aa0000
for r in 1 2 3; do
    for p in 0 32; do
        DORY_WGPU_PART=$p bench_run rule-2aa-part$p $b models/dory-tiny 0 exact kl:0.05 512 128 1 60
    done
done
for p in 0 32; do DORY_WGPU_PART=$p bench_tg all-2aa-part$p $b models/dory-tiny 0 exact 512 128 1; done
for p in 0 32; do
    echo "== part $p" >> $OUT/a/profile.txt
    DORY_WGPU_PART=$p DORY_WGPU_PROFILE=host timeout 60 $b bench --backend wgpu --model models/dory-tiny --depth 0 \
        --attention exact --exit kl:0.05 --prompt 512 --gen 128 --reps 1 2>&1 | grep -v XDG >> $OUT/a/profile.txt
done
