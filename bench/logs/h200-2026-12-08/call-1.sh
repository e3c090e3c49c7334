#!/usr/bin/env bash
# Built at the twenty-fourth session, not run (its device time was spent): why a prompt's
# attention at depth 0 takes ~96 µs a dispatch (attend_coop_d, h200-2026-12-07g/call-1) for
# ~0.5 GFLOP of products, and split_combine ~25 µs to join its 4 chunks. The larger config's
# pp512 at depth 0 (two rounds) and its kernels timed alone, with the prompt's blocks in
# chunks of 256 keys or more (the default: 4 chunks at depth 0), 512 (2) and 1024 (1, which
# the attention writes directly), each with attend_coop (the default) and attend_rows; then
# the same three at depth 4096 for the prompt alone.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
for round in 1 2; do
    for per in 256 512 1024; do
        for c in default 0; do
            (
                export DORY_WGPU_BLOCK_PER=$per
                [ $c = default ] || export DORY_WGPU_ATTEND_COOP=$c
                bench_run per-$per-coop-$c $dory $large 0 exact none 512 1 2 120
            )
        done
    done
done
for per in 256 512 1024; do
    for c in default 0; do
        echo "== depth 0 DORY_WGPU_BLOCK_PER=$per DORY_WGPU_ATTEND_COOP=$c" >> $OUT/a/profile.txt
        (
            export DORY_WGPU_BLOCK_PER=$per
            [ $c = default ] || export DORY_WGPU_ATTEND_COOP=$c
            DORY_WGPU_PROFILE=1 timeout 120 $dory bench --backend wgpu --model $large --depth 0 \
                --attention exact --exit none --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
        )
    done
done
grep -E '==|pp512|attend|split_combine|kv_parts|prep' $OUT/a/profile.txt | head -60
for per in 256 512 1024; do
    (export DORY_WGPU_BLOCK_PER=$per; bench_run per-$per-4096 $dory $large 4096 exact none 512 1 1 120)
done
