#!/usr/bin/env bash
# 2026-12-07, twenty-third session, call 5: the staged form's copies with their loads
# gathered (1024: a subgroup's fragments all read before any is stored) and the next
# tile's keys read during this tile's value sums (2048), against 784, each profiled alone
# at 4096 (3863: 3856 with no products and no softmax, its skeleton), then the larger
# config's pp512 at 4096, and the GPU tests under 20240. Skeleton parts: 7959 without the staged
# copies, 12055 without the softmax's loops, 16151 without both.
# 20240: 3856 with each lane's walk over its keys turned (16384).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a
export DORY_WGPU_ATTEND_COOP=1
large_model
for x in 784 1808 3856 20240 3863 7959 12055 16151 1296 3848; do
    echo "== attend_coop variant $x" >> $OUT/a/profile.txt
    DORY_WGPU_COOP_VARIANT=$x DORY_WGPU_PROFILE=1 timeout 120 $dory bench --backend wgpu --model $large --depth 4096 \
        --attention exact --exit none --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
done
grep -E '==|attend_coop|error' $OUT/a/profile.txt
v() { # label variant model depth reps
    (export DORY_WGPU_COOP_VARIANT=$2; bench_run $1 $dory $3 $4 exact none 512 1 $5 120)
}
(export DORY_WGPU_ATTEND_COOP=0; bench_run rows-4096 $dory $large 4096 exact none 512 1 1 120)
for x in 784 3856 20240; do v coop-v$x-4096 $x $large 4096 1; done
DORY_WGPU_COOP_VARIANT=20240 CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $OUT/a/gpu-tests-v20240.log
grep -E "test result|panicked|FAILED" $OUT/a/gpu-tests-v20240.log | head -20
