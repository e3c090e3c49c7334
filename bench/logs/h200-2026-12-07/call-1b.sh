#!/usr/bin/env bash
# 2026-12-07, eighteenth session: call 1 cut to what the session's last device minutes hold
# (call-1.sh found no machine in nine tries): the GPU tests, dory-tiny under its rule with
# main's binary in one part and in parts of 32 and with 2aa0000's (the parts, two
# submissions a token), two rounds interleaved; one round of all passes and of the larger
# config; the host's time by phase. Built and carried as call-1.sh.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
echo "cores: $(nproc)"
for r in 1 2; do
    for p in 0 32; do
        DORY_WGPU_PART=$p bench_run rule-part$p $dory models/dory-tiny 0 exact kl:0.05 512 128 1 120
    done
    bench_run rule-2aa0000 .wgpu-carry/dory-2aa0000 models/dory-tiny 0 exact kl:0.05 512 128 1 120
done
for p in 0 32; do
    DORY_WGPU_PART=$p bench_tg all-part$p $dory models/dory-tiny 0 exact 512 128 1
done
bench_tg all-2aa0000 .wgpu-carry/dory-2aa0000 models/dory-tiny 0 exact 512 128 1
for p in 0 32; do
    DORY_WGPU_PART=$p bench_tg large-part$p $dory $large 0 exact 512 64 1
done
for p in 0 32; do
    echo "== dory-tiny, kl:0.05, part $p (host)" >> $OUT/a/profile.txt
    DORY_WGPU_PART=$p DORY_WGPU_PROFILE=host timeout 120 $dory bench --backend wgpu --model models/dory-tiny \
        --depth 0 --attention exact --exit kl:0.05 --prompt 512 --gen 128 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
done
grep -h 'passes, finished\|submitting\|recording (between' $OUT/a/profile.txt
