#!/usr/bin/env bash
# 2026-12-07, twenty-third session, call 6 (the first of this directory): attend_coop.wgsl in
# its one staged form, on by default for heads of 128 dims. The GPU tests (the second device
# takes it at every head's dims), the larger config's prompt with it against
# DORY_WGPU_ATTEND_COOP=0 (attend_rows.wgsl), at depth 4096 and 0 (with the
# decode after it), one repetition each (cut to fit the session's last device time).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a
large_model
CI=true timeout 120 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $OUT/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $OUT/a/gpu-tests.log | head -20
bench_run coop-4096 $dory $large 4096 exact none 512 1 1 60
(export DORY_WGPU_ATTEND_COOP=0; bench_run rows-4096 $dory $large 4096 exact none 512 1 1 60)
bench_run coop-0 $dory $large 0 exact none 512 64 1 60
(export DORY_WGPU_ATTEND_COOP=0; bench_run rows-0 $dory $large 0 exact none 512 64 1 60)
