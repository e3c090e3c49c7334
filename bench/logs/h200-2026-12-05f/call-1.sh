#!/usr/bin/env bash
# 2026-12-05, seventh session, first call: the host's share of a decoded token cut three
# ways (96904f6): argmax in 16 lanes, the bind-group cache hashed with FxHash, an untested
# read-out's head writing straight into kept (one copy dispatch fewer a token under KL).
# Built with `bench/wgpu_h200.sh build`; dory-base is the last stop's engine (GPU-identical
# to 432f5d5). Carry .gl and .wgpu-carry.
# 1. the GPU tests;
# 2. dory-tiny's decode (tg128 after pp512, exact) under its rule and with all passes, the
#    two binaries interleaved, three rounds; `dory generate` greedy and sampled, 1,024 tokens;
# 3. the larger config's decode at depth 0, two rounds (its vocabulary of 32,000 is where
#    argmax cost most);
# 4. the host's time by phase under the rule, both binaries.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a $o/b
source bench/device_setup.sh
nvidia-smi --query-gpu=name --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests.log
grep -E "test result|panicked|FAILED" $o/a/wgpu_tests.log | head -20
tiny() { # bin label
    timeout 40 $1 bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 --gen 128 \
        --attention exact --exit $EXIT --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$1 $2 |" | tee -a $o/b/tiny.jsonl
}
for round in 1 2 3; do
    for bin in $dory .wgpu-carry/dory-base; do EXIT=kl:0.05 tiny $bin rule; EXIT=none tiny $bin none; done
done
gen() { # bin args...
    local bin=$1; shift
    timeout 40 $bin generate --backend wgpu --model models/dory-tiny -n 1024 --seed 7 --attention exact \
        --stats --no-echo "$@" "Once upon a time" 2>&1 >/dev/null | grep -v XDG_RUNTIME | tail -1 \
        | sed "s|^|$bin $* |" | tee -a $o/b/generate.txt
}
for round in 1 2; do
    for bin in $dory .wgpu-carry/dory-base; do gen $bin --temperature 0.8; gen $bin --temperature 0; done
done
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for round in 1 2; do
    for bin in $dory .wgpu-carry/dory-base; do
        timeout 60 $bin bench --backend wgpu --model $large --reps 2 --prompt 512 --gen 32 \
            --attention exact --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$bin large |" | tee -a $o/b/large.jsonl
    done
done
for bin in $dory .wgpu-carry/dory-base; do
    DORY_WGPU_PROFILE=host timeout 40 $bin bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
        --gen 128 --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$bin |" >> $o/b/profile_host.txt
done
cat $o/b/profile_host.txt
