#!/usr/bin/env bash
# Device call of 2026-12-04, third session: the chain's floor says a small stage costs
# ~4.6 µs and the attention is the furthest from its floor. Fewer, longer chunks of a decoded
# row's attention (DORY_WGPU_ATTEND_PER, cut to whole tiles of 64 keys) let the out
# projection join them on the way in (partials within DORY_WGPU_COMBINE_BYTES), one
# dispatch fewer a layer-pass. At depth 0 (~528 keys, 17 chunks of 32 by default): 512 gives
# 3 chunks of 256 (25 KB of partials, within the default 32 KB), 256 gives 5 of 128 (41.6
# KB, the limit raised to 48 KB), 128 gives 9 of 64 (74.9 KB, raised to 80 KB). Decode of
# both models at depth 0 under each, twice, interleaved, the larger one profiled by kernel.
cd "$(dirname "$0")/../../.."  # the repository root
a=DORY_WGPU_ATTEND_PER=512
b=DORY_WGPU_ATTEND_PER=256+DORY_WGPU_COMBINE_BYTES=49152
c=DORY_WGPU_ATTEND_PER=128+DORY_WGPU_COMBINE_BYTES=81920
BUDGET=420 SWEEP_DEPTHS="0" SWEEP_PROFILE="large,decode,0" SWEEP="defaults $a $b $c defaults $a $b $c" \
    bash bench/wgpu_h200.sh run sweep
