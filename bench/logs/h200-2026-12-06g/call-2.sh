#!/usr/bin/env bash
# 2026-12-06, fifteenth session, call 2: the next band's first round read ahead again, held
# in named W8s and passed by value (call 1's form kept it in a `var` of a struct of four
# W8s and a private var, and every gemv kernel ran slower, the one-band ones too), against
# the last stop's binary (dory-61cdd8d). The GPU tests; the larger config's decode at depth
# 0 after 16 tokens (two rounds) and after pp512 (one), with 2 bands (the default) and 3;
# profiles of both binaries' decode. Built with `bench/wgpu_h200.sh build`; carry .gl and
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
for prompt in 16 512 16; do
    bench_tg base $base $large 0 exact $prompt 64 1
    bench_tg new $dory $large 0 exact $prompt 64 1
    DORY_WGPU_GEMV_BANDS=3 bench_tg bands3 $dory $large 0 exact $prompt 64 1
done
for v in "base $base" "new $dory"; do
    set -- $v
    echo "== $1" >> $o/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 120 $2 bench --backend wgpu --model $large --depth 0 \
        --attention exact --exit none --prompt 16 --gen 32 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
grep -E "^==|gemv" $o/a/profile.txt
