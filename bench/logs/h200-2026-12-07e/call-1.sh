#!/usr/bin/env bash
# 2026-12-07, twenty-second session, call 1: attend_coop.wgsl rewritten (four subgroups a
# block of 16 rows, each at its own pace: its scores, weights and sums in workgroup memory
# of its own, subgroupBarrier; whole tiles weighed without masks, unseen tiles skipped, the
# head's dims a pipeline constant at 128). The GPU tests with it on (DORY_WGPU_ATTEND_COOP=1),
# then the larger config's pp512 at depth 4096 under attend_rows and attend_coop and its
# diagnostic forms (1: no value sums' products, 2: no scores' products, 4: no softmax), at
# depth 0, and dory-tiny's, two rounds; the GPU's time by kernel at 4096.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a
export DORY_WGPU_ATTEND_COOP=1
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $OUT/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $OUT/a/gpu-tests.log | head -20
large_model
for round in 1 2; do
    (export DORY_WGPU_ATTEND_COOP=0; bench_run rows-4096 $dory $large 4096 exact none 512 1 1 120)
    bench_run coop-4096 $dory $large 4096 exact none 512 1 1 120
    for v in 1 2 4 7; do
        (export DORY_WGPU_COOP_VARIANT=$v; bench_run coop-v$v-4096 $dory $large 4096 exact none 512 1 1 120)
    done
    (export DORY_WGPU_ATTEND_COOP=0; bench_run rows-0 $dory $large 0 exact none 512 1 3 120)
    bench_run coop-0 $dory $large 0 exact none 512 1 3 120
    (export DORY_WGPU_ATTEND_COOP=0; bench_run rows-tiny $dory models/dory-tiny 0 exact none 512 1 3 120)
    bench_run coop-tiny $dory models/dory-tiny 0 exact none 512 1 3 120
done
for c in 0 1; do
    echo "== attend_coop $c" >> $OUT/a/profile.txt
    DORY_WGPU_ATTEND_COOP=$c DORY_WGPU_PROFILE=1 timeout 120 $dory bench --backend wgpu --model $large --depth 4096 \
        --attention exact --exit none --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
done
grep -E '==|attend|kv_parts|prep|pp512' $OUT/a/profile.txt | head -40
