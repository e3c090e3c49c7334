#!/usr/bin/env bash
# Twenty-fourth session, call 2: the GPU tests again after call 1's three failures (the
# bound on m was computed for q8_0 models too, whose tensors are not floats: fixed), then
# the larger config's pp512 at depths 0 and 512 against the last stop's binary (f2cbae0,
# dory-base), three rounds interleaved, since call 1 saw the gain at 4096 and dory-tiny
# but none at depth 0.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
base=.wgpu-carry/dory-base
for round in 1 2 3; do
    for depth in 0 512; do
        bench_run base-$depth $base $large $depth exact none 512 1 2 120
        bench_run new-$depth $dory $large $depth exact none 512 1 2 120
    done
done
