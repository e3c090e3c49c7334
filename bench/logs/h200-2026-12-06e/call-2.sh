#!/usr/bin/env bash
# 2026-12-06, thirteenth session, call 2: call 1's changes without gemv.wgsl's bands (taken
# out after call 1): the pass's close from the residual's one reduction (and residual_mix's,
# a prompt's), that reduction unfenced in a projection's prologue, combine_sealed in one
# walk; against the last stop (1e0b3f8). The GPU tests; decode interleaved, two rounds: the
# larger config at depth 0 and dory-tiny (exact, all passes); the larger config at depth
# 4096 (exact) and 32768 (O(1)); one profile each of the larger config's decode (the most
# wanted first, in case the device time runs out). Built with `bench/wgpu_h200.sh build
# 1e0b3f8`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
# Both binaries in turn (bench_tg): model depth attention prompt gen reps.
both() {
    local v
    for v in "base .wgpu-carry/dory-1e0b3f8" "new .wgpu-carry/dory"; do
        bench_tg $v "$@"
    done
}
ab() { # one round at depth 0
    both $large 0 exact 16 64 2
    both models/dory-tiny 0 exact 512 128 3
}
ab
both $large 32768 o1 16 64 1
ab
both $large 4096 exact 16 64 1
for v in "base .wgpu-carry/dory-1e0b3f8" "new .wgpu-carry/dory"; do
    set -- $v
    echo "== $1" >> $o/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 120 $2 bench --backend wgpu --model $large --depth 0 \
        --attention exact --exit none --prompt 16 --gen 32 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
grep -E "^==|gemv|combine|attend " $o/a/profile.txt
