#!/usr/bin/env bash
# 2026-12-07, eighteenth session, call 1 (not run: fifteen tries found no machine;
# call-1b.sh, cut from it, ran). A decoded step under dory-tiny's exit rule records
# all four passes (~96 dispatches, 2.4 of the passes run), and on the H100 machines the host
# bounds it: wgpu checks and tracks each dispatch as its encoder finishes, ~301 µs of a
# token's ~480 µs of host time (the seventeenth session's call 1). Main now encodes a
# submission's dispatches in parts of at least DORY_WGPU_PART (default 32; 0: one part) on
# threads of the pool at once (2aa0000), and sends a read begun with nothing recorded before
# it as the first copy of the next submission: one submission a greedy token, not two.
# Here: the GPU tests (on lavapipe also with parts of 4); dory-tiny under its rule with main's binary in
# one part, 32 and 16, and 2aa0000's (the parts, two submissions a token), three rounds
# interleaved; all passes and the larger config (the GPU's bound: neither change may cost
# it); the host's time by phase. Last, the seventeenth session's call 3 on
# .wgpu-carry/dory-45cf9ce (2aa0000 plus the knobs of measure-3.patch beside this script,
# never merged): each decode kernel dispatched with no workgroups (DORY_WGPU_EMPTY, its
# barriers kept) and twice in a row (DORY_WGPU_TWICE).
# Built with `bench/wgpu_h200.sh build 45cf9ce`, then `build 2aa0000`; carry .gl and
# .wgpu-carry. tg after pp512, exact, depth 0.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
call_start
echo "cores: $(nproc)"
for r in 1 2 3; do
    for p in 0 32 16; do
        DORY_WGPU_PART=$p bench_run rule-part$p $dory models/dory-tiny 0 exact kl:0.05 512 128 1 120
    done
    bench_run rule-2aa0000 .wgpu-carry/dory-2aa0000 models/dory-tiny 0 exact kl:0.05 512 128 1 120
done
for r in 1 2; do
    for p in 0 32; do
        DORY_WGPU_PART=$p bench_tg all-part$p $dory models/dory-tiny 0 exact 512 128 1
        DORY_WGPU_PART=$p bench_tg large-part$p $dory $large 0 exact 512 64 1
    done
    bench_tg all-2aa0000 .wgpu-carry/dory-2aa0000 models/dory-tiny 0 exact 512 128 1
    bench_tg large-2aa0000 .wgpu-carry/dory-2aa0000 $large 0 exact 512 64 1
done
for b in $dory,0 $dory,32 .wgpu-carry/dory-2aa0000,32; do
    echo "== dory-tiny, kl:0.05, ${b%,*} part ${b#*,} (host)" >> $OUT/a/profile.txt
    DORY_WGPU_PART=${b#*,} DORY_WGPU_PROFILE=host timeout 120 ${b%,*} bench --backend wgpu --model models/dory-tiny \
        --depth 0 --attention exact --exit kl:0.05 --prompt 512 --gen 128 --reps 1 2>&1 | grep -v XDG_RUNTIME >> $OUT/a/profile.txt
done
m=.wgpu-carry/dory-45cf9ce
empty_twice $m $large 64 attend combine gemv gemv_residual gemv_glu_residual
empty_twice $m models/dory-tiny 128 attend gemv_combine gemv_glu_residual gemv_residual gemv
