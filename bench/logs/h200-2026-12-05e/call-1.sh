#!/usr/bin/env bash
# 2026-12-05, sixth session, first call: what a dispatch's bindings cost the host. Built with
# `bench/wgpu_h200.sh build` at the commit after c5cc0ea (the floors' new encode probe);
# carry .gl and .wgpu-carry.
# 1. the GPU tests (the CPU adapters' residual apart changes nothing on a GPU);
# 2. the floors with dory-tiny, among them `encode_per_dispatch`: the host's µs a dispatch
#    to record, finish and submit, with 1, 2, 4 and 8 bindings;
# 3. the host's time by phase in dory-tiny's decode under its rule, as call-5 of
#    h200-2026-12-05d measured it, to set the engine's finishing against the probe's.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
timeout 90 .wgpu-carry/dory-wgpu-kernels --model models/dory-tiny --dtypes bf16 --quick 2>&1 \
    | grep -v XDG_RUNTIME > $o/a/floors.txt
grep -o '"encode_per_dispatch":[^]]*]' $o/a/floors.txt
grep -o '"dispatch_cpu_s":[^,]*' $o/a/floors.txt
DORY_WGPU_PROFILE=host timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
    --gen 128 --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME > $o/b/profile_host.txt
cat $o/b/profile_host.txt
