#!/usr/bin/env bash
# Built at the twenty-fourth session, not run (its device time was spent): why a prompt's
# attention at depth 0 takes ~96 µs a dispatch (attend_coop_d, h200-2026-12-07g/call-1) for
# ~0.5 GFLOP of products, and split_combine ~25 µs to join its chunks. The larger config's
# pp512 at depth 0 (two rounds) and its kernels timed alone, with the prompt's blocks cut
# (DORY_WGPU_BLOCK_PER keys or more a chunk, for DORY_WGPU_COOP_GROUPS workgroups) as by
# default (256,1024: 4 chunks of 5 tiles at depth 0), in 2 (1024,1024: 16 tiles and the
# walk's last), in 6 chunks of 3 tiles (128,2048) and in 17 of one (64,4096):
# a block's walk at depth 0 is at most 17 tiles, which the default cuts into 4 workgroups'
# walks of 5, each tile ~4,000 clocks of an SM (h200-2026-12-07e/call-5); attend_rows at the
# default cut beside them; then the same cuts at depth 4096 (9, 6, 17 and 37 chunks) for the
# prompt alone.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
cuts="256,1024 1024,1024 128,2048 64,4096"
run_cut() {  # label depth reps cut [attend_coop]
    (
        export DORY_WGPU_BLOCK_PER=${4%,*} DORY_WGPU_COOP_GROUPS=${4#*,}
        [ -z "${5:-}" ] || export DORY_WGPU_ATTEND_COOP=$5
        bench_run $1 $dory $large $2 exact none 512 1 $3 120
    )
}
for round in 1 2; do
    for cut in $cuts; do
        run_cut cut-$cut 0 2 $cut
    done
    run_cut rows-256 0 2 256,1024 0
done
for cut in $cuts; do
    echo "== depth 0, cut $cut" >> $OUT/a/profile.txt
    (
        export DORY_WGPU_BLOCK_PER=${cut%,*} DORY_WGPU_COOP_GROUPS=${cut#*,} DORY_WGPU_PROFILE=1
        timeout 120 $dory bench --backend wgpu --model $large --depth 0 --attention exact --exit none \
            --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
    )
done
grep -E '==|pp512|attend|split_combine|kv_parts|prep' $OUT/a/profile.txt | head -60
for cut in $cuts; do
    run_cut cut-$cut-4096 4096 1 $cut
done
