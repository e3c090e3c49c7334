#!/usr/bin/env bash
# 2026-12-07, twenty-first session, call 3: a prompt's attention scored KEYS keys an
# invocation over slices of the dims (attend_rows.wgsl, KEYS 8 or 4: DORY_WGPU_ROWS_KEYS), and
# its values read for four rows each (DORY_WGPU_ROWS_QUAD=1), against main's binary (f55a5e6,
# carried as .wgpu-carry/dory-f55a5e6: `bash bench/wgpu_h200.sh build f55a5e6`). The GPU tests
# first (all under the defaults; the attention's and the fixtures' under each other form),
# then the larger config's pp512 at depths 4096 and 0 and dory-tiny's, two rounds interleaved.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
for v in "DORY_WGPU_ROWS_KEYS=4" "DORY_WGPU_ROWS_QUAD=1" "DORY_WGPU_ROWS_QUAD=1 DORY_WGPU_ROWS_KEYS=4"; do
    echo "== tests under $v"
    (export $v; CI=true timeout 100 .wgpu-carry/gpu-tests --test-threads 4 attention fixture 2>&1 \
        | grep -E "test result|panicked|FAILED" | head -8)
done
main=.wgpu-carry/dory-f55a5e6
for round in 1 2; do
    bench_run main-4096 $main $large 4096 exact none 512 1 2 120
    bench_run keys8-4096 $dory $large 4096 exact none 512 1 2 120
    (export DORY_WGPU_ROWS_KEYS=4; bench_run keys4-4096 $dory $large 4096 exact none 512 1 2 120)
    (export DORY_WGPU_ROWS_QUAD=1; bench_run quad8-4096 $dory $large 4096 exact none 512 1 2 120)
    (export DORY_WGPU_ROWS_QUAD=1 DORY_WGPU_ROWS_KEYS=4; bench_run quad4-4096 $dory $large 4096 exact none 512 1 2 120)
    bench_run main-0 $main $large 0 exact none 512 1 3 120
    bench_run keys8-0 $dory $large 0 exact none 512 1 3 120
    (export DORY_WGPU_ROWS_KEYS=4; bench_run keys4-0 $dory $large 0 exact none 512 1 3 120)
    (export DORY_WGPU_ROWS_QUAD=1; bench_run quad8-0 $dory $large 0 exact none 512 1 3 120)
    bench_run main-tiny $main models/dory-tiny 0 exact none 512 1 3 120
    bench_run keys8-tiny $dory models/dory-tiny 0 exact none 512 1 3 120
    (export DORY_WGPU_ROWS_QUAD=1; bench_run quad8-tiny $dory models/dory-tiny 0 exact none 512 1 3 120)
done
