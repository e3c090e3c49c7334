#!/usr/bin/env bash
# 2026-12-05, fifth session, third call: exit.wgsl in one walk of the logits (online maxima
# and sums, two reductions; it walked them five times, 17.5 µs a test on the H100 in
# call 2), on top of the step recorded whole (38db14e). Built with `bench/wgpu_h200.sh
# build` beside call 2's binaries: dory-0fce00a (the step whole, the old exit kernel) and
# dory-8889a39 (before both); carry .gl and .wgpu-carry.
# 1. the GPU tests;
# 2. dory-tiny's decode (tg128 after pp512) under its rule, tested on the device, the three
#    binaries interleaved, and with all passes against 8889a39;
# 3. the GPU's time by kernel under the rule;
# 4. where issue 9's figures stand: the larger config's pp512 and decode at depths 0 and
#    4096.
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
for round in 1 2; do
    EXIT=kl:0.05
    for bin in $dory .wgpu-carry/dory-0fce00a .wgpu-carry/dory-8889a39; do tiny $bin rule; done
    EXIT=none
    for bin in $dory .wgpu-carry/dory-8889a39; do tiny $bin none; done
done
DORY_WGPU_PROFILE=1 timeout 30 $dory bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
    --gen 128 --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME > $o/b/profile.txt
cat $o/b/profile.txt
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for depth in 0 4096; do
    timeout 60 $dory bench --backend wgpu --model $large --depth $depth --reps 2 --prompt 512 --gen 32 \
        --attention exact --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|large $depth |" | tee -a $o/b/large.jsonl
done
