#!/usr/bin/env bash
# 2026-12-07, twenty-second session, call 2: attend_coop.wgsl's forms (DORY_WGPU_COOP_VARIANT):
# 8 the scores in four accumulators (chains of 12 products), 16 the queries' fragments held
# through the chunk, 128 the head's dims read from p, 256 each tile's keys and values copied
# into workgroup memory by the four subgroups together, 512 (with 256) the values read
# before the softmax; and diagnostics: 32 every tile's keys read from the span's first
# tile, 64 its values too (built, not run: the session's device time ran short). The GPU
# larger config's pp512 at 4096 under each, at 0, and dory-tiny's; then the GPU tests under
# 792 (all new forms).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
mkdir -p $OUT/a
export DORY_WGPU_ATTEND_COOP=1
large_model
v() { # label variant model depth reps
    (export DORY_WGPU_COOP_VARIANT=$2; bench_run $1 $dory $3 $4 exact none 512 1 $5 120)
}
(export DORY_WGPU_ATTEND_COOP=0; bench_run rows-4096 $dory $large 4096 exact none 512 1 1 120)
for x in 0 256 272 768 784 792; do v coop-v$x-4096 $x $large 4096 1; done
(export DORY_WGPU_ATTEND_COOP=0; bench_run rows-0 $dory $large 0 exact none 512 1 3 120)
v coop-v784-0 784 $large 0 3
(export DORY_WGPU_ATTEND_COOP=0; bench_run rows-tiny $dory models/dory-tiny 0 exact none 512 1 3 120)
v coop-v784-tiny 784 models/dory-tiny 0 3
DORY_WGPU_COOP_VARIANT=792 CI=true timeout 120 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $OUT/a/gpu-tests-v792.log
grep -E "test result|panicked|FAILED" $OUT/a/gpu-tests-v792.log | head -20
# (added at the twenty-third session's run) the staged form's kernels alone at 4096
for x in 784 792; do
    echo "== attend_coop variant $x" >> $OUT/a/profile.txt
    DORY_WGPU_COOP_VARIANT=$x DORY_WGPU_PROFILE=1 timeout 120 $dory bench --backend wgpu --model $large --depth 4096 \
        --attention exact --exit none --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
done
grep -E '==|attend|kv_parts|prep' $OUT/a/profile.txt | head -40
