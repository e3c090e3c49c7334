#!/usr/bin/env bash
# Run on call 1's warm machine: the prompt's attention in one chunk a block (direct: no
# partials, no join) against the default's four, at depth 0 (two rounds) and 4096.
# (1024,1024 and 4096,128 both give one chunk at depth 0: 527 keys.)
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh; large_model
run_cut() { ( export DORY_WGPU_BLOCK_PER=${4%,*} DORY_WGPU_COOP_GROUPS=${4#*,}; bench_run $1 $dory $large $2 exact none 512 1 $3 120 ); }
for r in 1 2; do run_cut new-256 0 2 256,1024; run_cut new-2ch 0 2 1024,1024; run_cut new-1ch 0 2 4096,128; done
for cut in 1024,1024 4096,128; do
    echo "== $cut" >> $OUT/a/profile.txt
    ( export DORY_WGPU_BLOCK_PER=${cut%,*} DORY_WGPU_COOP_GROUPS=${cut#*,} DORY_WGPU_PROFILE=1
      timeout 60 $dory bench --backend wgpu --model $large --depth 0 --attention exact --exit none \
          --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG >> $OUT/a/profile.txt )
done
grep -E '==|pp512|attend|split|combine' $OUT/a/profile.txt
run_cut new-1ch-4096 4096 1 4096,128; run_cut new-256-4096 4096 1 256,1024
