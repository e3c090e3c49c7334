#!/usr/bin/env bash
# 2026-12-05, fifth session, first call, on main's build (8889a39; its engine is ea66a97's):
# 1. the GPU tests on the H200 (ea66a97's one submission a greedy step has run there only
#    in `dory bench`);
# 2. dory-tiny's decode with all passes and under its rule (kl:0.05), tested on the device
#    and on the host, and under rules that never hold (kl:0) and always hold at the first
#    test (kl:1e9); the host's time by phase under each, the GPU's by kernel under two.
#    Read against the code: under a rule tested on the device, a greedy step recorded ahead
#    runs only its first pass (up to its first read-out); its later passes and tests are
#    recorded after the token's read-back, while the device runs that pass.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
tiny() { # label env...
    local label=$1; shift
    env "$@" timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 --gen 128 \
        --attention exact --exit $EXIT --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" | tee -a $o/b/exit.jsonl
}
for round in 1 2; do
    for EXIT in none kl:0.05 kl:0 kl:1e9; do
        tiny "$EXIT device" DORY_WGPU_EXIT=device
        [ $EXIT = kl:0.05 ] && tiny "$EXIT host" DORY_WGPU_EXIT=host
    done
done
for EXIT in none kl:0.05 kl:1e9; do
    echo "== --exit $EXIT, DORY_WGPU_PROFILE=host" >> $o/b/profiles.txt
    DORY_WGPU_PROFILE=host timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
        --gen 128 --attention exact --exit $EXIT 2>&1 | grep -v XDG_RUNTIME >> $o/b/profiles.txt
done
for EXIT in none kl:0.05; do
    echo "== --exit $EXIT, DORY_WGPU_PROFILE=1" >> $o/b/profiles.txt
    DORY_WGPU_PROFILE=1 timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
        --gen 128 --attention exact --exit $EXIT 2>&1 | grep -v XDG_RUNTIME >> $o/b/profiles.txt
done
cat $o/b/profiles.txt
