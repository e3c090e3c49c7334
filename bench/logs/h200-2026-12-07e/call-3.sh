#!/usr/bin/env bash
# 2026-12-07, twenty-second session, call 3: call 2's plan cut to the device time left (the
# forms' pp512 at 4096 first, then the GPU tests under 792 for as long as the call lasts).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a
export DORY_WGPU_ATTEND_COOP=1
large_model
v() { # label variant model depth reps
    (export DORY_WGPU_COOP_VARIANT=$2; bench_run $1 $dory $3 $4 exact none 512 1 $5 60)
}
(export DORY_WGPU_ATTEND_COOP=0; bench_run rows-4096 $dory $large 4096 exact none 512 1 1 60)
for x in 256 784 792 0; do v coop-v$x-4096 $x $large 4096 1; done
DORY_WGPU_COOP_VARIANT=792 CI=true timeout 120 .wgpu-carry/gpu-tests --test-threads 4 attention 2>&1 | grep -v XDG_RUNTIME > $OUT/a/gpu-tests-v792.log
grep -E "test result|panicked|FAILED" $OUT/a/gpu-tests-v792.log | head -20
