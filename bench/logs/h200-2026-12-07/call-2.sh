#!/usr/bin/env bash
# 2026-12-07, eighteenth session, call 2 (not run: no device time left): issue 9's figures with
# main's binary, in order of need so that a call cut short keeps the most: the larger
# config's pp512 + tg64 at depth 0, dory-tiny's pp512 + tg128 (all passes and its exit rule),
# the larger config at 4096 (exact), the PyTorch peer, the larger config at 32768 (O(1)).
# Built with `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large_model
fig $large 0 exact none 512 64 2
fig models/dory-tiny 0 exact none 512 128 3
fig models/dory-tiny 0 exact kl:0.05 512 128 3
fig $large 4096 exact none 512 64 1
timeout 150 python3 bench/wgpu_torch.py bench/wgpu-large.json --depth 0 --tokens 64 2>&1 | tail -3 | tee $OUT/a/torch.txt
fig $large 0 exact none 512 64 2
fig $large 32768 o1 none 512 64 1
