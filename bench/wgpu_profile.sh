#!/usr/bin/env bash
# Where the GPU's decode and prefill time goes, per kernel (DORY_WGPU_PROFILE=1), for the
# larger config and dory-tiny, beside the wall-clock speed with the default and with one
# submission per sync point. Run on the device after `bench/wgpu_h200.sh build`, carrying
# .gl and .wgpu-carry.
set -uo pipefail
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
d=.wgpu-carry/dory
large=/tmp/wgpu-large
time timeout 120 $d init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
b() { timeout 100 $d bench --backend wgpu --exit none "$@" 2>&1 | grep -v XDG_RUNTIME; }
echo "== larger config, decode: wall clock (default batching, then one submission per sync)"
b --model $large --prompt 1 --gen 64 --reps 2
DORY_WGPU_BATCH=0 b --model $large --prompt 1 --gen 64 --reps 2
echo "== larger config, decode: GPU time per kernel"
DORY_WGPU_PROFILE=1 b --model $large --prompt 1 --gen 32 --reps 1
echo "== larger config, prefill of 512: GPU time per kernel"
DORY_WGPU_PROFILE=1 b --model $large --prompt 512 --gen 1 --reps 1
echo "== dory-tiny, decode: GPU time per kernel"
DORY_WGPU_PROFILE=1 b --model models/dory-tiny --prompt 1 --gen 64 --reps 1
