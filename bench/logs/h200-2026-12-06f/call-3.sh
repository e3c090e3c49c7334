#!/usr/bin/env bash
# 2026-12-06, fourteenth session, call 3: attend.wgsl's walks with 4 or 8 loads in flight
# (DORY_WGPU_ATTEND_AHEAD), two more rounds of the larger config's decode at depths 0 and
# 4096 (exact), and attend's time alone at 4096 under each. Call 2's binaries.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for round in 1 2; do
    for ahead in 4 8; do
        DORY_WGPU_ATTEND_AHEAD=$ahead bench_tg ahead$ahead $dory $large 0 exact 16 64 2
        DORY_WGPU_ATTEND_AHEAD=$ahead bench_tg ahead$ahead $dory $large 4096 exact 16 64 1
    done
done
for ahead in 4 8; do
    echo "== ahead $ahead" >> $o/a/profile.txt
    DORY_WGPU_ATTEND_AHEAD=$ahead DORY_WGPU_PROFILE=1 timeout 60 $dory bench --backend wgpu --model $large \
        --depth 4096 --attention exact --exit none --prompt 16 --gen 16 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
grep -E "^==|attend |combine" $o/a/profile.txt
