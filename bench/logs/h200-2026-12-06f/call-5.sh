#!/usr/bin/env bash
# Prepared in 2026-12-06's fourteenth session, not run (too little device time was left to
# start a machine): the next session's first call. Built with `bench/wgpu_h200.sh build
# d5481cc` (the binary before attend.wgsl's last pieces in one round trip, a94f4da); carry
# .gl and .wgpu-carry.
# 1. The last pieces in one round trip (a94f4da) against d5481cc, two rounds interleaved:
#    dory-tiny (heads of 48 dims: three pieces a lane, which the walks of four never took)
#    and the larger config at depth 0 after pp512.
# 2. A decoded row's attention after pp512 (the depth-0 bar's context: ~560 keys, 17 chunks
#    of 32 keys a KV head) under other cuts of its keys: 8 invocations a key (tiles of 32),
#    or chunks of at least 64 keys (9 chunks).
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for round in 1 2; do
    for v in "base .wgpu-carry/dory-d5481cc" "new $dory"; do
        bench_tg $v models/dory-tiny 0 exact 512 128 3
        bench_tg $v $large 0 exact 512 64 1
    done
    DORY_WGPU_ATTEND_LANES=8 bench_tg lanes8 $dory $large 0 exact 512 64 1
    DORY_WGPU_ATTEND_PER=64 bench_tg per64 $dory $large 0 exact 512 64 1
done
