#!/usr/bin/env bash
# 2026-12-07, twenty-first session, call 4: attend_rows.wgsl with a tile's fetched pieces
# (and its places, and a row's partials) named rather than arrays indexed in loops, KEYS 8
# and 4 (DORY_WGPU_ROWS_KEYS), and each tile read when it is used rather than a tile ahead
# (DORY_WGPU_ROWS_AHEAD=0, a knob of this build only), against main (f55a5e6). The GPU tests
# first (all under the defaults, the attention's and the fixtures' under each other form), then
# pp512 of the larger config at depths 4096 and 0 and of dory-tiny, two rounds interleaved;
# then the attention's time by kernel at 4096 for main and the best.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
for v in "DORY_WGPU_ROWS_KEYS=4" "DORY_WGPU_ROWS_AHEAD=0" "DORY_WGPU_ROWS_AHEAD=0 DORY_WGPU_ROWS_KEYS=4"; do
    echo "== tests under $v"
    (export $v; CI=true timeout 100 .wgpu-carry/gpu-tests --test-threads 4 attention fixture 2>&1 \
        | grep -E "test result|panicked|FAILED" | head -8)
done
main=.wgpu-carry/dory-f55a5e6
for round in 1 2; do
    bench_run main-4096 $main $large 4096 exact none 512 1 2 120
    bench_run keys8-4096 $dory $large 4096 exact none 512 1 2 120
    (export DORY_WGPU_ROWS_KEYS=4; bench_run keys4-4096 $dory $large 4096 exact none 512 1 2 120)
    (export DORY_WGPU_ROWS_AHEAD=0; bench_run now8-4096 $dory $large 4096 exact none 512 1 2 120)
    (export DORY_WGPU_ROWS_AHEAD=0 DORY_WGPU_ROWS_KEYS=4; bench_run now4-4096 $dory $large 4096 exact none 512 1 2 120)
    bench_run main-0 $main $large 0 exact none 512 1 3 120
    bench_run keys8-0 $dory $large 0 exact none 512 1 3 120
    (export DORY_WGPU_ROWS_KEYS=4; bench_run keys4-0 $dory $large 0 exact none 512 1 3 120)
    bench_run main-tiny $main models/dory-tiny 0 exact none 512 1 3 120
    bench_run keys8-tiny $dory models/dory-tiny 0 exact none 512 1 3 120
    (export DORY_WGPU_ROWS_KEYS=4; bench_run keys4-tiny $dory models/dory-tiny 0 exact none 512 1 3 120)
done
