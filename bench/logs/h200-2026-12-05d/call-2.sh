#!/usr/bin/env bash
# 2026-12-05, fifth session: a decoded step whose exit rule the device tests is recorded
# whole, ahead of its token (Forward::passes_to_read records every pass, test and kept
# read-out up to the host's next read; held ops may hold a region that may be skipped).
# Before, a greedy step recorded ahead ran only up to its first read-out, and its later
# passes were recorded after the token's read-back while the device ran that one pass.
# Also new, off by default: DORY_WGPU_SPLIT=N encodes a submission of at least 2N dispatches
# as command buffers of ~N each, finished on the pool's threads at once.
# Built with `bench/wgpu_h200.sh build 8889a39` (the binary before beside it); carry .gl
# and .wgpu-carry.
# 1. the GPU tests on the H200, also with DORY_WGPU_SPLIT=8;
# 2. dory-tiny's decode (tg128 after pp512), this build against 8889a39, interleaved: all
#    passes, its rule (kl:0.05) on the device and on the host, rules that never hold (kl:0)
#    and always hold at the first test (kl:1e9); split encodings of 24 and 12;
# 3. the host's time by phase and the GPU's by kernel under the rule, this build;
# 4. `dory generate` sampling (temperature 0.8, held steps) under its rule, both builds;
# 5. the larger config's decode at depth 0, split encodings of 0 and 32.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
old=.wgpu-carry/dory-8889a39
for split in 0 8; do
    DORY_WGPU_SPLIT=$split CI=true timeout 120 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME \
        > $o/a/wgpu_tests_split$split.log
    echo "== DORY_WGPU_SPLIT=$split"; grep -E "test result|panicked|FAILED" $o/a/wgpu_tests_split$split.log | head -20
done
tiny() { # bin label env...
    local bin=$1 label=$2; shift 2
    env "$@" timeout 30 $bin bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 --gen 128 \
        --attention exact --exit $EXIT --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$bin $label |" | tee -a $o/b/exit.jsonl
}
for round in 1 2; do
    EXIT=none
    tiny $dory none; tiny $old none; tiny $dory "none split24" DORY_WGPU_SPLIT=24
    EXIT=kl:0.05
    tiny $dory rule; tiny $old rule; tiny $dory "rule split24" DORY_WGPU_SPLIT=24
    tiny $dory "rule split12" DORY_WGPU_SPLIT=12
    tiny $dory "rule host" DORY_WGPU_EXIT=host; tiny $old "rule host" DORY_WGPU_EXIT=host
    EXIT=kl:1e9
    tiny $dory always; tiny $old always
    EXIT=kl:0
    tiny $dory never; tiny $old never
done
for p in host 1; do
    for split in 0 24; do
        echo "== --exit kl:0.05, DORY_WGPU_PROFILE=$p DORY_WGPU_SPLIT=$split" >> $o/b/profiles.txt
        DORY_WGPU_SPLIT=$split DORY_WGPU_PROFILE=$p timeout 30 $dory bench --backend wgpu --model models/dory-tiny \
            --reps 2 --prompt 512 --gen 128 --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME >> $o/b/profiles.txt
        [ $p = 1 ] && break
    done
done
cat $o/b/profiles.txt
for bin in $dory $old $dory $old; do
    echo "== $bin" >> $o/b/generate.txt
    timeout 30 $bin generate --backend wgpu --model models/dory-tiny -n 400 --temperature 0.8 --seed 7 \
        --attention exact --stats --no-echo "Once upon a time" 2>&1 >/dev/null | grep -v XDG_RUNTIME >> $o/b/generate.txt
done
cat $o/b/generate.txt
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for round in 1 2; do
    for split in 0 32; do
        DORY_WGPU_SPLIT=$split timeout 40 $dory bench --backend wgpu --model $large --reps 2 --prompt 512 --gen 32 \
            --attention exact --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|large split$split |" | tee -a $o/b/large.jsonl
    done
done
