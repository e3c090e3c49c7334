#!/usr/bin/env bash
# Prepared in 2026-12-06's fifteenth session (no device time was left), run as the sixteenth
# session's first call, with more added. Carry .gl and .wgpu-carry, built by
# `bench/wgpu_h200.sh build df53fae` and `build 031aea6`, with 031aea6's GPU test binary as
# .wgpu-carry/gpu-tests-031aea6 (main's binary is `dory`).
# - df53fae: a banded projection's next band read ahead into the same pieces as the band's
#   last round, once used (gemv.wgsl's gemv_bands: no more registers; calls 1 and 2 held it
#   in pieces of its own and ran 0.82×), taken out of main until measured.
# - 031aea6 (branch attend-v4): a decoded row's value sums four dims an invocation, a
#   16-byte load a key (half the round trips of a tile's values).
# The GPU tests (main's, then 031aea6's); the larger config's decode at depth 0 after 16
# tokens (two rounds) and after pp512 (one), and dory-tiny's (tg128 after pp512, two rounds),
# the three binaries interleaved; then profiles: each dispatch alone (main, df53fae), and
# each kernel's share of the chain (DORY_WGPU_PROFILE=chain, new) of both models (main, 031aea6).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
CI=true timeout 150 .wgpu-carry/gpu-tests-031aea6 --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $OUT/a/gpu-tests-031aea6.log
grep -E "test result|panicked|FAILED" $OUT/a/gpu-tests-031aea6.log | head -20
bands=.wgpu-carry/dory-df53fae
v4=.wgpu-carry/dory-031aea6
for prompt in 16 512 16; do
    bench_tg base $dory $large 0 exact $prompt 64 1
    bench_tg bands $bands $large 0 exact $prompt 64 1
    bench_tg v4 $v4 $large 0 exact $prompt 64 1
done
for r in 1 2; do
    bench_tg base $dory models/dory-tiny 0 exact 512 128 1
    bench_tg bands $bands models/dory-tiny 0 exact 512 128 1
    bench_tg v4 $v4 models/dory-tiny 0 exact 512 128 1
done
profile_large base $dory
profile_large bands $bands
profile_large base $dory chain
profile_large v4 $v4 chain
for b in $dory $v4; do
    echo "== dory-tiny $b (chain)" >> $OUT/a/profile.txt
    DORY_WGPU_PROFILE=chain timeout 120 $b bench --backend wgpu --model models/dory-tiny --depth 0 \
        --attention exact --exit none --prompt 16 --gen 64 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
done
# dory-tiny under its config's exit rule (2.4 passes a token), as a user runs it.
echo "== dory-tiny, its exit rule (chain)" >> $OUT/a/profile.txt
DORY_WGPU_PROFILE=chain timeout 120 $dory bench --backend wgpu --model models/dory-tiny --depth 0 \
    --attention exact --prompt 16 --gen 64 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
cat $OUT/a/profile.txt
