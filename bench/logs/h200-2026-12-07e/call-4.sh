#!/usr/bin/env bash
# 2026-12-07, twenty-third session, call 4: the staged form (784) taken apart by the
# diagnostics (1 no value sums' products, 2 no scores' products, 4 no softmax), the larger
# config's pp512 at 4096, each profiled alone.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a
export DORY_WGPU_ATTEND_COOP=1
large_model
for x in 784 785 786 788 791 784; do
    echo "== attend_coop variant $x" >> $OUT/a/profile.txt
    DORY_WGPU_COOP_VARIANT=$x DORY_WGPU_PROFILE=1 timeout 120 $dory bench --backend wgpu --model $large --depth 4096 \
        --attention exact --exit none --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
done
grep -E '==|attend_coop' $OUT/a/profile.txt
