#!/usr/bin/env bash
# After call-4 (the same build and machine, an H100): dory-tiny's decode is bound by the
# host's encoding under its exit rule (call-3's profile: ~4 submissions a token, each
# ~100 µs of the host's time). Submissions of other sizes (DORY_WGPU_BATCH: 0 is one a
# step), with and without the rule, twice, interleaved; the host's phases under BATCH=0.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/d
source bench/device_setup.sh
for round in 1 2; do
    for batch in default 0 128; do
        for exit in none kl:0.05; do
            env $([ $batch = default ] || echo DORY_WGPU_BATCH=$batch) timeout 40 $dory bench --backend wgpu \
                --model models/dory-tiny --reps 3 --prompt 512 --gen 128 --attention exact --exit $exit --json 2>&1 \
                | grep -v XDG_RUNTIME | sed "s|^|batch $batch exit $exit |" | tee -a $o/d/batch.jsonl
        done
    done
done
echo "== kl:0.05, DORY_WGPU_BATCH=0, DORY_WGPU_PROFILE=host" > $o/d/profile.txt
DORY_WGPU_BATCH=0 DORY_WGPU_PROFILE=host timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 2 \
    --prompt 512 --gen 128 --attention exact --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME >> $o/d/profile.txt
cat $o/d/profile.txt
