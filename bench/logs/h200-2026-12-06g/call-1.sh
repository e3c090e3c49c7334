#!/usr/bin/env bash
# 2026-12-06, fifteenth session, call 1 (the session's second; its first ran
# h200-2026-12-06f/call-5.sh): a banded projection's next band's first round of W loaded in
# the last round of the band before (gemv.wgsl's `next_round`), against the last stop's
# binary (dory-61cdd8d). The GPU tests; decode interleaved, two rounds, the larger config at
# depth 0 after pp512 and after 16 tokens, with 2 bands a workgroup (the default) and 3;
# depth 4096 exact once; profiles of both binaries' decode; dory-tiny with 8 invocations a
# key (DORY_WGPU_ATTEND_LANES=8), its chunks' 32 keys a tile. Built with
# `bench/wgpu_h200.sh build` (dory-61cdd8d: the last stop's `dory`, renamed); carry .gl and
# .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
base=.wgpu-carry/dory-61cdd8d
for round in 1 2; do
    for prompt in 512 16; do
        bench_tg base $base $large 0 exact $prompt 64 1
        bench_tg new $dory $large 0 exact $prompt 64 1
        DORY_WGPU_GEMV_BANDS=3 bench_tg bands3 $dory $large 0 exact $prompt 64 1
    done
    bench_tg base $base models/dory-tiny 0 exact 512 128 3
    DORY_WGPU_ATTEND_LANES=8 bench_tg lanes8 $base models/dory-tiny 0 exact 512 128 3
done
bench_tg base $base $large 4096 exact 16 64 1
bench_tg new $dory $large 4096 exact 16 64 1
for v in "base $base" "new $dory"; do
    set -- $v
    echo "== $1" >> $o/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 120 $2 bench --backend wgpu --model $large --depth 0 \
        --attention exact --exit none --prompt 16 --gen 32 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
grep -E "^==|gemv" $o/a/profile.txt
