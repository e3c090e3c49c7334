#!/usr/bin/env bash
# The lean form of call-1.sh and call-2.sh, for a session whose device time is short (on the
# same build: `bench/wgpu_h200.sh build e2a9afb`, carry .gl and .wgpu-carry), ~4 minutes:
# the GPU tests; dory-tiny under its exit rule on the device and on the host (whose tested
# read-outs now record the next step ahead) against all passes, and under a rule that
# always holds at its first test, twice, interleaved; the join's rewrite against e2a9afb on
# dory-tiny's decode; the host's time by phase under the rule, both ways.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
old=.wgpu-carry/dory-e2a9afb
tiny() { # label bin exit env...
    local label=$1 bin=$2 exit=$3; shift 3
    env "$@" timeout 40 $bin bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 --gen 128 \
        --attention exact --exit $exit --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$label |" | tee -a $o/b/bench.jsonl
}
for round in 1 2; do
    tiny "none new" $dory none
    tiny "none old" $old none
    tiny "kl:0.05 device" $dory kl:0.05 DORY_WGPU_EXIT=device
    tiny "kl:0.05 host" $dory kl:0.05 DORY_WGPU_EXIT=host
    tiny "kl:1e9 device" $dory kl:1e9 DORY_WGPU_EXIT=device
    tiny "kl:1e9 host" $dory kl:1e9 DORY_WGPU_EXIT=host
done
for e in device host; do
    echo "== kl:0.05 on the $e, DORY_WGPU_PROFILE=host" >> $o/b/profiles.txt
    DORY_WGPU_EXIT=$e DORY_WGPU_PROFILE=host timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 2 \
        --prompt 512 --gen 128 --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME >> $o/b/profiles.txt
done
cat $o/b/profiles.txt
