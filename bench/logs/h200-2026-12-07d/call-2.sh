#!/usr/bin/env bash
# 2026-12-07, twenty-first session, call 2: where a prompt's attention (attend_rows.wgsl)
# spends its time. The binary: main plus bench/logs/h200-2026-12-07d/probe-rows.patch (never
# merged; DORY_WGPU_ROWS_PROBE bits leave parts of the kernel out, its output garbage: 1 the
# scores' dot products but one piece, 2 the value sums, 4 the cache's loads, 8 the two middle
# barriers), built with
#   bash bench/wgpu_h200.sh build $(git rev-parse --short HEAD) bench/logs/h200-2026-12-07d/probe-rows.patch
# The larger config's pp512 (its time less the baseline's, over 32 dispatches, prices each
# part), then the blocks' workgroups (DORY_WGPU_ATTEND_GROUPS) and chunks (DORY_WGPU_BLOCK_PER)
# with main's binary.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large_model
m=$(ls .wgpu-carry/dory-*-probe-rows | head -1)
for round in 1 2; do
    for pr in 0 1 2 4 8 3 7 15; do
        (export DORY_WGPU_ROWS_PROBE=$pr; bench_run probe$pr-4096 $m $large 4096 exact none 512 1 2 120)
    done
done
for pr in 0 3 7 15; do
    (export DORY_WGPU_ROWS_PROBE=$pr; bench_run probe$pr-0 $m $large 0 exact none 512 1 3 120)
done
for g in 512 256 1024 2048; do
    (export DORY_WGPU_ATTEND_GROUPS=$g; bench_run groups$g-4096 $dory $large 4096 exact none 512 1 2 120)
done
for per in 128 512 1024; do
    (export DORY_WGPU_BLOCK_PER=$per; bench_run per$per-4096 $dory $large 4096 exact none 512 1 2 120)
done
DORY_WGPU_PROFILE=1 timeout 120 $dory bench --backend wgpu --model $large --depth 4096 \
    --attention exact --exit none --prompt 512 --gen 1 --reps 1 2>&1 | grep -v XDG_RUNTIME | tail -25
