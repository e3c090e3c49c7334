#!/usr/bin/env bash
# Not run yet (no device came). Build on the branch run-ahead-unbatched (`git checkout
# run-ahead-unbatched && bench/wgpu_h200.sh build 4facb9d`, carry .gl and .wgpu-carry).
# After call-5 (an H100): a greedy decoder's next step in one submission (Recorder::unbatched,
# the working tree's binary, .wgpu-carry/dory) against 4facb9d (batches of a quarter step),
# dory-tiny with all passes and under its rule, the larger config's decode; interleaved twice.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/e
source bench/device_setup.sh
old=.wgpu-carry/dory-4facb9d
large=/tmp/wgpu-large
[ -f $large/config.json ] || timeout 120 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for round in 1 2; do
    for bin in $dory $old; do
        for exit in none kl:0.05; do
            timeout 40 $bin bench --backend wgpu --model models/dory-tiny --reps 3 --prompt 512 --gen 128 \
                --attention exact --exit $exit --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$bin $exit |" \
                | tee -a $o/e/ahead.jsonl
        done
        timeout 60 $bin bench --backend wgpu --model $large --reps 2 --prompt 512 --gen 32 --attention exact \
            --json 2>&1 | grep -v XDG_RUNTIME | sed "s|^|$bin large |" | tee -a $o/e/ahead.jsonl
    done
done
