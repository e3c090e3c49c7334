#!/usr/bin/env bash
# Twenty-fourth session, call 3: the tensor-core GEMM's slicing retuned after this stop's
# GLU (f5075e9's binary): the larger config's pp512 at depth 0 (two rounds) and 4096 (one)
# with the default (products of fewer than 1024 subgroups' worth in slices: out and down
# in 2), and with q|k|v|gate's 1,280 blocks (4096,4,2) and gate|up's 2,816 too (8192,4,2)
# in 2 slices each.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large_model
for round in 1 2; do
    for s in default 4096,4,2 8192,4,2; do
        (
            [ $s = default ] || export DORY_WGPU_COOP_SLICES=$s
            bench_run slices-$s-0 $dory $large 0 exact none 512 1 2 120
            [ $round = 2 ] || bench_run slices-$s-4096 $dory $large 4096 exact none 512 1 1 120
        )
    done
done
