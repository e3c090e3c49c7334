#!/usr/bin/env bash
# 2026-12-05, fifth session, fifth call: a decoded row's read-out ends its pass as any other
# between passes (Between), the head reading s = N(h): its Resume edge goes (one dispatch a
# read-out). Built with `bench/wgpu_h200.sh build` beside dory-97f98b5 (call 3's engine)
# and dory-8889a39; carry .gl and .wgpu-carry.
# 1. the GPU tests;
# 2. dory-tiny's decode under its rule (device) and with all passes, the three binaries
#    interleaved;
# One round only: the session had ~360 s of device time left.
# 3. what call-4.sh asked: the floors with the indirect probes (an emptied dispatch's
#    price), the host's time by phase under the rule.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
CI=true timeout 100 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
tiny() { # bin label
    timeout 30 $1 bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 --gen 128 \
        --attention exact --exit $EXIT --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$1 $2 |" | tee -a $o/b/tiny.jsonl
}
for round in 1; do
    EXIT=kl:0.05
    for bin in $dory .wgpu-carry/dory-97f98b5 .wgpu-carry/dory-8889a39; do tiny $bin rule; done
    EXIT=none
    for bin in $dory .wgpu-carry/dory-8889a39; do tiny $bin none; done
done
timeout 45 .wgpu-carry/dory-wgpu-kernels --model models/dory-tiny --dtypes bf16 --quick 2>&1 \
    | grep -v XDG_RUNTIME > $o/a/floors.txt
grep -iE "dispatch|floor" $o/a/floors.txt | head -30
DORY_WGPU_PROFILE=host timeout 30 $dory bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
    --gen 128 --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME > $o/b/profile_host.txt
cat $o/b/profile_host.txt
