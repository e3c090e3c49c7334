#!/usr/bin/env bash
# 2026-12-05, fifth session: a decoded step whose exit rule the device tests is recorded
# whole, ahead of its token (Forward::passes_to_read records every pass, test and kept
# read-out up to the host's next read; held ops may hold a region that may be skipped).
# Before, a greedy step recorded ahead ran only up to its first read-out, and its later
# passes were recorded after the token's read-back while the device ran that one pass.
# Built with `bench/wgpu_h200.sh build 8889a39` (the binary before beside it); carry .gl
# and .wgpu-carry.
# 1. the GPU tests on the H200;
# 2. dory-tiny's decode (tg128 after pp512), this build against 8889a39, interleaved: all
#    passes, its rule (kl:0.05) on the device and on the host, rules that never hold (kl:0)
#    and always hold at the first test (kl:1e9);
# 3. `dory generate` sampling (temperature 0.8, held steps) under its rule, both builds;
# 4. the host's time by phase and the GPU's by kernel under the rule, this build.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
old=.wgpu-carry/dory-8889a39
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
tiny() { # bin label env...
    local bin=$1 label=$2; shift 2
    env "$@" timeout 40 $bin bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 --gen 128 \
        --attention exact --exit $EXIT --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$bin $label |" | tee -a $o/b/exit.jsonl
}
for round in 1 2; do
    for EXIT in none kl:0.05 kl:1e9 kl:0; do
        for bin in $dory $old; do
            tiny $bin "$EXIT device" DORY_WGPU_EXIT=device
            [ $EXIT = kl:0.05 ] && tiny $bin "$EXIT host" DORY_WGPU_EXIT=host
        done
    done
done
for round in 1 2; do
    for bin in $dory $old; do
        echo "== $bin round $round" >> $o/b/generate.txt
        timeout 40 $bin generate --backend wgpu --model models/dory-tiny -n 400 --temperature 0.8 --seed 7 \
            --attention exact --stats --no-echo "Once upon a time" 2>&1 >/dev/null | grep -v XDG_RUNTIME >> $o/b/generate.txt
    done
done
cat $o/b/generate.txt
for p in host 1; do
    echo "== --exit kl:0.05, DORY_WGPU_PROFILE=$p" >> $o/b/profiles.txt
    DORY_WGPU_PROFILE=$p timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
        --gen 128 --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME >> $o/b/profiles.txt
done
cat $o/b/profiles.txt
