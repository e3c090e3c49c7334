#!/usr/bin/env bash
# 2026-12-06, fourteenth session, call 4: the peer in the same call: PyTorch compile + graph
# (bench/wgpu_torch.py) on the larger config at depth 0, beside the engine's decode there
# after pp512 (with attend.wgsl's 8 loads in flight). Call 2's binaries.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
large=/tmp/wgpu-large
[ -f $large/config.json ] || timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
DORY_WGPU_ATTEND_AHEAD=8 bench_tg engine $dory $large 0 exact 512 64 2
timeout 150 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth 0 --tokens 64 2>&1 | tail -3 | tee $o/a/torch.txt
DORY_WGPU_ATTEND_AHEAD=8 bench_tg engine $dory $large 0 exact 512 64 2
