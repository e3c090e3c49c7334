#!/usr/bin/env bash
# Fourth device call of the sixth session of 2026-12-04: where issue 9 stands at bcce687 (a
# read waits for its own submission). Build with `bench/wgpu_h200.sh build 50e36a6` and
# carry .gl and .wgpu-carry: `run quick` (GPU tests, floors, both models, dory-tiny under its
# exit rule, an A/B against 50e36a6, PyTorch), then dory-tiny's `dory generate` under its exit
# rule, greedy and default sampling, against 50e36a6.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
OUT=$o/a BUDGET=400 bash bench/wgpu_h200.sh run quick
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DORY_REPO=$PWD
OUT=$o/b MODEL=models/dory-tiny BINARIES="old=.wgpu-carry/dory-50e36a6 new=.wgpu-carry/dory" \
    ARGS="--backend wgpu" TOKENS=1024 timeout 80 bash bench/generate_speed.sh 3
