#!/usr/bin/env bash
# 2026-12-06, tenth session, call 5: PyTorch compile + graph (bench/wgpu_torch.py) beside
# this stop's binary (4202054) on the larger config, decode at depth 0 (exact) and at depth
# 32768 (the engine in O(1) mode, its config's default, and exact). Carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for a in "0 exact" "32768 o1"; do
    set -- $a
    timeout 100 $dory bench --backend wgpu --model $large --depth $1 --attention $2 --exit none --prompt 16 \
        --gen 64 --reps 2 2>&1 | grep -E "^tg|attention" | sed "s/^/depth $1 $2: /" | tee -a $o/a/summary.txt
done
for depth in 0 32768; do
    timeout 150 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth $depth --tokens 64 2>&1 | tail -3 \
        | tee -a $o/a/torch.txt
done
