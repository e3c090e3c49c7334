#!/usr/bin/env bash
# Run on the same warm machine: b0f61d2 (dory-base) against the empty chunks ended at once
# (dory), pp512 at depths 512 and 0, two rounds interleaved.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh; large_model
for r in 1 2; do
    bench_run base-512 .wgpu-carry/dory-base $large 512 exact none 512 1 2 60
    bench_run new-512 $dory $large 512 exact none 512 1 2 60
    bench_run base-0 .wgpu-carry/dory-base $large 0 exact none 512 1 2 60
    bench_run new-0 $dory $large 0 exact none 512 1 2 60
done
