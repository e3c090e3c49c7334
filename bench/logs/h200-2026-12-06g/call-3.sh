#!/usr/bin/env bash
# Prepared in 2026-12-06's fifteenth session (no device time was left), run as the sixteenth
# session's first call, with dory-tiny's rounds added. A banded projection's next band read ahead into the same pieces as
# the band's last round, once used (df53fae, gemv.wgsl's gemv_bands: no more registers; calls
# 1 and 2 held it in pieces of its own and ran 0.82×), taken out of main until measured.
# Build with `bench/wgpu_h200.sh build df53fae` (main's binary as `dory`, df53fae's as
# `dory-df53fae`); carry .gl and .wgpu-carry. The GPU tests (main's); the larger config's
# decode at depth 0 after 16 tokens (two rounds) and after pp512 (one), interleaved; profiles
# of both. If df53fae is faster, land it with `git revert` of its revert and run its GPU
# tests on the device before the stop.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
new=.wgpu-carry/dory-df53fae
for prompt in 16 512 16; do
    bench_tg base $dory $large 0 exact $prompt 64 1
    bench_tg new $new $large 0 exact $prompt 64 1
done
# gemv_bands walks the one-band kernels too: dory-tiny's decode (tg128 after pp512), twice.
for r in 1 2; do
    bench_tg base $dory models/dory-tiny 0 exact 512 128 1
    bench_tg new $new models/dory-tiny 0 exact 512 128 1
done
profile_large base $dory
profile_large new $new
# Each kernel's share of the chain (DORY_WGPU_PROFILE=chain, new this session), of both
# models' decode (dory-tiny's too), the sums against the unprofiled step.
profile_large base $dory chain
echo "== dory-tiny (chain)" >> $OUT/a/profile.txt
DORY_WGPU_PROFILE=chain timeout 120 $dory bench --backend wgpu --model models/dory-tiny --depth 0 \
    --attention exact --exit none --prompt 16 --gen 64 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
cat $OUT/a/profile.txt
