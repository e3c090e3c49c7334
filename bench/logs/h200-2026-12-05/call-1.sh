#!/usr/bin/env bash
# Planned in the 2026-12-04 sessions (no device was lent to either). Build with
# `bench/wgpu_h200.sh build 50e36a6` and carry .gl and .wgpu-carry; call-2.sh follows.
# 1. The GPU tests (17: exit.wgsl's among them; the third device's decoded rows in
#    workgroups of 1024); `dory bench` with the last token not running
#    ahead (def2bd3) against 50e36a6, depth 0, interleaved twice.
# 2. dory-tiny under its own exit rule, the rule tested on the device (the default; a greedy
#    decoder's next step then runs ahead too) against the host (DORY_WGPU_EXIT=host): `dory
#    bench` (tg128 after pp512) and `dory generate` (default sampling and greedy).
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b $o/c
old=.wgpu-carry/dory-50e36a6
OUT=$o/a BUDGET=240 SWEEP_TESTS=1 SWEEP_DEPTHS="0" SWEEP_ARGS="--attention exact" \
    SWEEP="defaults bin:$old defaults bin:$old" bash bench/wgpu_h200.sh run sweep
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DORY_REPO=$PWD
for round in 1 2 3; do
    for e in device host; do
        DORY_WGPU_EXIT=$e timeout 40 .wgpu-carry/dory bench --backend wgpu --model models/dory-tiny \
            --reps 3 --prompt 512 --gen 128 --json | sed "s/\"attention\":\"[a-z0-9]*\"/\"attention\":\"exit on the $e\"/" \
            | tee -a $o/b/exit_bench.jsonl
    done
done
for e in device host; do
    DORY_WGPU_EXIT=$e OUT=$o/c/$e MODEL=models/dory-tiny BINARIES="new=.wgpu-carry/dory" \
        ARGS="--backend wgpu" TOKENS=1024 timeout 60 bash bench/generate_speed.sh 3
done
