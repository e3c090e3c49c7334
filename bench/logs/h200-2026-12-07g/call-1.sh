#!/usr/bin/env bash
# Twenty-fourth session, call 1: the GPU tests with this stop's binary (residual_split cuts
# a unit h with a fixed scale; gate|up's epilogue forms SwiGLU and cuts the down projection's
# parts, gemm_glu / gemm_sliced_glu), then pp512 against the last stop's binary (f2cbae0,
# carried as dory-base) and against DORY_WGPU_FUSE without `glu`, interleaved two rounds;
# the kernels timed alone at depth 0 under both binaries; last session's call-2 sweep of the
# tensor-core attention against attend_rows at depths 512–2048; then issue 9's figures.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
base=.wgpu-carry/dory-base
noglu=prep,residual,edge,enter,split,combine
for round in 1 2; do
    for depth in 0 4096; do
        bench_run base-$depth $base $large $depth exact none 512 1 2 120
        bench_run new-$depth $dory $large $depth exact none 512 1 2 120
        (export DORY_WGPU_FUSE=$noglu; bench_run noglu-$depth $dory $large $depth exact none 512 1 2 120)
    done
    bench_run base-tiny $base models/dory-tiny 0 exact none 512 1 3 120
    bench_run new-tiny $dory models/dory-tiny 0 exact none 512 1 3 120
done
for b in base new; do
    bin=$dory; [ $b = base ] && bin=$base
    echo "== $b depth 0" >> $OUT/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 120 $bin bench --backend wgpu --model $large --depth 0 \
        --attention exact --exit none --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
done
grep -E '==|pp512|gemm|split|residual|attend|prep|kv_parts' $OUT/a/profile.txt | head -40
for depth in 512 1024 2048; do
    bench_run coop-$depth $dory $large $depth exact none 512 1 2 120
    (export DORY_WGPU_ATTEND_COOP=0; bench_run rows-$depth $dory $large $depth exact none 512 1 2 120)
done
figures
