#!/usr/bin/env bash
# Built at the twenty-sixth session: what its one call (h200-2026-12-09/call-1.sh, cut short
# at 182 s, the session's device time spent) did not reach. First the GPU tests, then
# attend_rows.wgsl's empty chunks ended at once (6856ab7) against 69f7a76
# (`bench/wgpu_h200.sh build 69f7a76`, carried as .wgpu-carry/dory-69f7a76): dory-tiny's
# pp512 (heads of 64 dims: attend_rows) and the larger config's with DORY_WGPU_ATTEND_COOP=0,
# at depth 0, two rounds interleaved. Then attend_coop_d at depth 4096 under
# DORY_WGPU_COOP_PROBE (bench/wgpu_h200.sh build REV bench/logs/h200-2026-12-08/probe-coop.patch,
# carried as .wgpu-carry/dory-REV-probe-coop): 0 whole, 4 no tile walked, 8 every workgroup
# ends at once; and 0 again at depth 0 (the last call's first profile ran while the card was
# coming up to speed). Then split_combine taken apart the same way, with a binary built with
# bench/logs/h200-2026-12-10/probe-split.patch (carried as .wgpu-carry/dory-REV-probe-split;
# DORY_WGPU_SPLIT_PROBE bits leave out: 1 the chunks' join, 2 the row's maximum, 4 the parts'
# stores, 8 everything), at depth 0 under the default cut and 17 chunks of one tile
# (64,4096), where it took 28–31 and 59–62 µs whatever the attention left (h200-2026-12-09).
# Last, issue 9's figures.
# Build here first (carry [".gl", ".wgpu-carry"]):
#   rm -f .wgpu-carry/*; R=$(git rev-parse --short HEAD)
#   bash bench/wgpu_h200.sh build $R bench/logs/h200-2026-12-08/probe-coop.patch
#   bash bench/wgpu_h200.sh build $R bench/logs/h200-2026-12-10/probe-split.patch
#   bash bench/wgpu_h200.sh build 69f7a76
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
prof() {  # label depth cut bits [kind: coop or split]
    local kind=${5:-coop}
    local probe=$(ls .wgpu-carry/dory-*-probe-$kind | head -1)
    echo "== $1: depth $2, cut $3, $kind probe $4" >> $OUT/a/profile.txt
    (
        export DORY_WGPU_BLOCK_PER=${3%,*} DORY_WGPU_COOP_GROUPS=${3#*,} DORY_WGPU_PROFILE=1
        export DORY_WGPU_COOP_PROBE=$4 DORY_WGPU_SPLIT_PROBE=$4
        timeout 120 $probe bench --backend wgpu --model $large --depth $2 --attention exact --exit none \
            --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
    )
}
for round in 1 2; do
    bench_run tiny-base .wgpu-carry/dory-69f7a76 models/dory-tiny 0 exact none 512 1 3 120
    bench_run tiny-new $dory models/dory-tiny 0 exact none 512 1 3 120
    (
        export DORY_WGPU_ATTEND_COOP=0
        bench_run rows-base .wgpu-carry/dory-69f7a76 $large 0 exact none 512 1 2 120
        bench_run rows-new $dory $large 0 exact none 512 1 2 120
    )
done
prof default 0 256,1024 0
for bits in 0 4 8; do
    prof default 4096 256,1024 $bits
done
for bits in 0 1 2 4 8; do
    prof default 0 256,1024 $bits split
done
for bits in 0 1 8; do
    prof one-tile 0 64,4096 $bits split
done
grep -E '^==|attend_coop_d|split_combine' $OUT/a/profile.txt
figures
