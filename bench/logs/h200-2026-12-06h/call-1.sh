#!/usr/bin/env bash
# 2026-12-06, sixteenth session, call 1 (the session's second; its first was
# bench/logs/h200-2026-12-06g/call-3): issue 9's figures on an H200, the first since the
# 2026-12-05 seventh session (every call since ran on H100s), with main's binary (its kernels
# those of 61cdd8d; their GPU tests passed on this H200 in 06g/call-3). In order of need, so
# that a call cut short keeps the most: the larger config's pp512 + tg64 at depth 0,
# dory-tiny's pp512 + tg128 (all passes and its exit
# rule), the larger config at 4096 (exact), the peer, and the larger config at 32768 (O(1)). Built with
# `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
figures
# Added before it ran (seventeenth session): the larger config's prompt, GPU time by kernel.
echo "== pp512, depth 0" >> $OUT/a/profile.txt
DORY_WGPU_PROFILE=1 timeout 120 $dory bench --backend wgpu --model $large --depth 0 --attention exact \
    --exit none --prompt 512 --gen 2 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
# dory-tiny under its rule: GPU time by kernel, then the host's time by phase (who bounds it).
for mode in 1 host; do
    echo "== dory-tiny, kl:0.05 ($mode)" >> $OUT/a/profile.txt
    DORY_WGPU_PROFILE=$mode timeout 120 $dory bench --backend wgpu --model models/dory-tiny --depth 0 --attention exact \
        --exit kl:0.05 --prompt 512 --gen 128 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
done
