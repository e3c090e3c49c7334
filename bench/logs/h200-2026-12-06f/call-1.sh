#!/usr/bin/env bash
# 2026-12-06, fourteenth session, call 1: the last stop (61845b8: the pass's close from the
# residual's one reduction, unfenced in a projection's prologue, combine_sealed in one walk,
# never timed as a whole) against 1e0b3f8, and a projection that forms its x from the
# residual taking 2 or 3 bands of W a workgroup (BANDS, a pipeline constant: only the
# prologue kernels, only where a projection has ≥ 512 bands; DORY_WGPU_GEMV_BANDS). The GPU
# tests; decode interleaved, two rounds: the larger config at depth 0 and dory-tiny (exact,
# all passes); the larger config at 4096 (exact) and 32768 (O(1)); profiles of the larger
# config's decode. Built with `bench/wgpu_h200.sh build` (dory-1e0b3f8 carried from
# `build 1e0b3f8`); carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
# Every variant in turn (bench_tg): model depth attention prompt gen reps.
all() {
    bench_tg base .wgpu-carry/dory-1e0b3f8 "$@"
    bench_tg new .wgpu-carry/dory "$@"
    DORY_WGPU_GEMV_BANDS=2 bench_tg bands2 .wgpu-carry/dory "$@"
    DORY_WGPU_GEMV_BANDS=3 bench_tg bands3 .wgpu-carry/dory "$@"
}
ab() { # one round at depth 0
    all $large 0 exact 16 64 2
    all models/dory-tiny 0 exact 512 128 3
}
ab
all $large 32768 o1 16 64 1
ab
all $large 4096 exact 16 64 1
for b in 1 2; do
    echo "== bands $b" >> $o/a/profile.txt
    DORY_WGPU_GEMV_BANDS=$b DORY_WGPU_PROFILE=1 timeout 120 $dory bench --backend wgpu --model $large --depth 0 \
        --attention exact --exit none --prompt 16 --gen 32 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
grep -E "^==|gemv|combine|attend " $o/a/profile.txt
