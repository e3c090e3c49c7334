#!/usr/bin/env bash
# Written 2026-12-05 (fourth session), when no device was lent; for the next session's first
# call, on main's build with the binary before join.wgsl's rewrite beside it (for call-2.sh)
# (`bench/wgpu_h200.sh build e2a9afb`, carry .gl and .wgpu-carry).
# 1. The GPU tests: main's attend_coop (restructured after 2026-12-05b's call 1) has not run
#    on tensor cores since.
# 2. Why dory-tiny decodes slower under its exit rule (2.24 passes a token, ~1,134 tok/s)
#    than with all four passes (~1,400): every dispatch after a step's first exit test is
#    indirect, and that region goes to the device in one submission. The floors' probes
#    price an indirect dispatch, with its counts and emptied (new: dispatch_indirect_gpu_s,
#    dispatch_emptied_gpu_s, beside dispatch_gpu_s); `dory bench` under rules that never
#    hold (kl:0: every test and indirect dispatch, all passes) and always hold at the first
#    test (kl:1e9: two passes and two emptied), against none and the config's rule, on the
#    device and on the host (whose tested read-outs now record the next step while they
#    come back, as a step's last read does: Forward::record_next); the host's time by phase
#    (now with "recording ahead of a read-back" and "encoding held ops") and the GPU's by
#    kernel.
# call-2.sh follows on the same build.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
timeout 120 .wgpu-carry/dory-wgpu-kernels --model models/dory-tiny --dtypes bf16 --quick 2>&1 \
    | grep -v XDG_RUNTIME > $o/a/floors.txt
head -c 1500 $o/a/floors.txt; echo
tiny() { # label env... -- then dory bench's --exit
    local label=$1; shift
    env "$@" timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 --gen 128 \
        --attention exact --exit $EXIT --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" | tee -a $o/b/exit.jsonl
}
for round in 1 2; do
    for EXIT in none kl:0 kl:1e9 kl:0.05; do
        tiny "$EXIT device" DORY_WGPU_EXIT=device
        [ $EXIT = none ] || tiny "$EXIT host" DORY_WGPU_EXIT=host
    done
done
for EXIT in none kl:0 kl:1e9 kl:0.05; do
    for p in host 1; do
        echo "== --exit $EXIT, DORY_WGPU_PROFILE=$p" >> $o/b/profiles.txt
        DORY_WGPU_PROFILE=$p timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
            --gen 128 --attention exact --exit $EXIT 2>&1 | grep -v XDG_RUNTIME >> $o/b/profiles.txt
    done
done
cat $o/b/profiles.txt
