#!/usr/bin/env bash
# Why a prompt's attention at depth 0 takes ~96 µs a dispatch (attend_coop_d,
# h200-2026-12-07g/call-1) for ~0.5 GFLOP of products, and whether its empty chunks cost
# it: at depth 0 a causal prompt's early blocks walk fewer keys than its last, so ~47 % of
# the default cut's workgroups (4 chunks of 5 tiles) hold no key. `dory` now ends those at
# once (their rows' m and l only, the join reading no value sums of a chunk whose l is 0);
# `dory-base` is b0f61d2, which walks them empty and writes their zero sums.
# The larger config's pp512 (medians of 2, two rounds) with the blocks cut
# (DORY_WGPU_BLOCK_PER keys or more a chunk, for DORY_WGPU_COOP_GROUPS workgroups) as by
# default (256,1024: 4 chunks of 5 tiles at depth 0), in 6 chunks of 3 tiles (128,2048) and
# in 17 of one (64,4096); each kernel's time at depth 0 under the three cuts; then depth
# 4096 (9 chunks by default).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
base=.wgpu-carry/dory-base
run_cut() {  # label binary depth reps cut
    (
        export DORY_WGPU_BLOCK_PER=${5%,*} DORY_WGPU_COOP_GROUPS=${5#*,}
        bench_run $1 $2 $large $3 exact none 512 1 $4 120
    )
}
for round in 1 2; do
    run_cut base-256 $base 0 2 256,1024
    run_cut new-256 $dory 0 2 256,1024
    run_cut base-64 $base 0 2 64,4096
    run_cut new-64 $dory 0 2 64,4096
    run_cut new-128 $dory 0 2 128,2048
done
for cut in 256,1024 128,2048 64,4096; do
    echo "== depth 0, cut $cut" >> $OUT/a/profile.txt
    (
        export DORY_WGPU_BLOCK_PER=${cut%,*} DORY_WGPU_COOP_GROUPS=${cut#*,} DORY_WGPU_PROFILE=1
        timeout 120 $dory bench --backend wgpu --model $large --depth 0 --attention exact --exit none \
            --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
    )
done
grep -E '==|pp512|attend|split_combine|kv_parts|prep|gemm' $OUT/a/profile.txt | head -60
run_cut base-256-4096 $base 4096 1 256,1024
run_cut new-256-4096 $dory 4096 1 256,1024
run_cut new-128-4096 $dory 4096 1 128,2048
