#!/usr/bin/env bash
# Built at the twenty-fifth session; trimmed at the twenty-sixth to fit what device time was
# left (the most needed first, depth 4096 last). First the GPU tests with the partials poisoned
# (`Options::poison_partials`: NaN in each new buffer of them on the tests' two devices of
# their own), which no GPU with tensor cores has run yet: a join that took an empty chunk's
# unwritten value sums (attend_coop.wgsl ends such chunks at once) would fail.
# Then where attend_coop_d's fixed share a workgroup goes (h200-2026-12-08/call-1: 1,088
# workgroups of one tile took 108.7 µs against 78.2 for 272 of five): the larger config's
# pp512 profiled with a binary built with bench/logs/h200-2026-12-08/probe-coop.patch
# (`bench/wgpu_h200.sh build REV bench/logs/h200-2026-12-08/probe-coop.patch`, carried as
# .wgpu-carry/dory-REV-probe-coop), whose DORY_WGPU_COOP_PROBE bits leave out: 1 the queries'
# 16 fragments a subgroup (each loaded from the first's place), 2 the sums' stores (m and l
# only), 4 every tile's walk, 8 everything (each workgroup ends at once). At depth 0 under
# the default cut (4 chunks of 5 tiles) and 17 chunks of one (64,4096); then depth 4096.
# Last, attend_rows.wgsl's empty chunks ended at once too (the commit after 69f7a76), against
# 69f7a76 (`bench/wgpu_h200.sh build 69f7a76`, carried as .wgpu-carry/dory-69f7a76):
# dory-tiny's pp512 (heads of 64 dims: attend_rows) and the larger config's with
# DORY_WGPU_ATTEND_COOP=0, at depth 0, two rounds interleaved.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
probe=$(ls .wgpu-carry/dory-*-probe-coop | head -1)
prof() {  # label depth cut bits
    echo "== $1: depth $2, cut $3, probe $4" >> $OUT/a/profile.txt
    (
        export DORY_WGPU_BLOCK_PER=${3%,*} DORY_WGPU_COOP_GROUPS=${3#*,} DORY_WGPU_PROFILE=1 DORY_WGPU_COOP_PROBE=$4
        timeout 120 $probe bench --backend wgpu --model $large --depth $2 --attention exact --exit none \
            --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
    )
}
for bits in 0 1 2 4 8; do
    prof default 0 256,1024 $bits
done
for bits in 0 4 8; do
    prof one-tile 0 64,4096 $bits
done
grep -E '^==|attend_coop_d' $OUT/a/profile.txt
for round in 1 2; do
    bench_run tiny-base .wgpu-carry/dory-69f7a76 models/dory-tiny 0 exact none 512 1 3 120
    bench_run tiny-new $dory models/dory-tiny 0 exact none 512 1 3 120
done
(
    export DORY_WGPU_ATTEND_COOP=0
    bench_run rows-base .wgpu-carry/dory-69f7a76 $large 0 exact none 512 1 2 120
    bench_run rows-new $dory $large 0 exact none 512 1 2 120
)
for bits in 0 4 8; do
    prof default 4096 256,1024 $bits
done
grep -E '^==|attend_coop_d' $OUT/a/profile.txt | tail -6
