#!/usr/bin/env bash
# Prepared in 2026-12-06's fifteenth session, not run (no device time was left): the next
# session's first call. A banded projection's next band read ahead into the same pieces as
# the band's last round, once used (df53fae, gemv.wgsl's gemv_bands: no more registers; calls
# 1 and 2 held it in pieces of its own and ran 0.82×), taken out of main until measured.
# Build with `bench/wgpu_h200.sh build df53fae` (main's binary as `dory`, df53fae's as
# `dory-df53fae`); carry .gl and .wgpu-carry. The GPU tests (main's); the larger config's
# decode at depth 0 after 16 tokens (two rounds) and after pp512 (one), interleaved; profiles
# of both. If df53fae is faster, land it with `git revert` of its revert and run its GPU
# tests on the device before the stop.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
new=.wgpu-carry/dory-df53fae
for prompt in 16 512 16; do
    bench_tg base $dory $large 0 exact $prompt 64 1
    bench_tg new $new $large 0 exact $prompt 64 1
done
for v in "base $dory" "new $new"; do
    set -- $v
    echo "== $1" >> $o/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 120 $2 bench --backend wgpu --model $large --depth 0 \
        --attention exact --exit none --prompt 16 --gen 32 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
grep -E "^==|gemv" $o/a/profile.txt
