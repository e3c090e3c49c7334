#!/usr/bin/env bash
# 2026-12-06, fourteenth session, call 5: a decoded row's attention after pp512 (the depth-0
# bar's context: ~560 keys, 17 chunks of 32 keys a KV head), with eight loads in flight,
# under other cuts of its keys: 8 invocations a key (tiles of 32), or chunks of at least 64
# keys (9 chunks). Two rounds, interleaved. Call 2's binaries (DORY_WGPU_ATTEND_AHEAD=8 is
# this stop's default). Not run: too little device time was left to start a machine; ready
# for the next session (after `bench/wgpu_h200.sh build`, where eight is the default).
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
export DORY_WGPU_ATTEND_AHEAD=8
for round in 1 2; do
    bench_tg defaults $dory $large 0 exact 512 64 1
    DORY_WGPU_ATTEND_LANES=8 bench_tg lanes8 $dory $large 0 exact 512 64 1
    DORY_WGPU_ATTEND_PER=64 bench_tg per64 $dory $large 0 exact 512 64 1
done
