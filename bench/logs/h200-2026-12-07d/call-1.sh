#!/usr/bin/env bash
# 2026-12-07, twenty-first session, call 1: the twentieth session's call-7.sh
# (bench/logs/h200-2026-12-07c), reordered so that a call cut short keeps the most wanted and
# trimmed to one round of the knobs: each decode kernel of the larger config emptied and run
# twice under main's defaults (the measuring binary: main plus
# bench/logs/h200-2026-12-07/measure-3-main.patch, built with
#   bash bench/wgpu_h200.sh build $(git rev-parse --short HEAD) bench/logs/h200-2026-12-07/measure-3-main.patch
# carry .gl and .wgpu-carry), the decoded row's attention in one chunk, the sweep of
# DORY_WGPU_GATE, then dory-tiny's kernels emptied and twice.
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large_model
m=$(ls .wgpu-carry/dory-*-measure-3-main | head -1)
empty_twice $m $large 64 attend combine gemv gemv_residual gemv_glu_residual
bench_knob default .wgpu-carry/dory $large 64
bench_knob direct .wgpu-carry/dory $large 64 DORY_WGPU_ATTEND_PER 4096
(export DORY_WGPU_ATTEND_PER=4096 DORY_WGPU_ATTEND_LANES=8; bench_knob direct-l8 .wgpu-carry/dory $large 64)
for n in 16 0 4 8 32; do
    (export DORY_WGPU_GATE=$n; bench_run rule-gate$n .wgpu-carry/dory models/dory-tiny 0 exact kl:0.05 512 128 3 120)
done
grep -h '"went_on"' $OUT/a/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' '); j = json.loads(j)
    print(k, round(j['tg']['median'], 1), 'emptied', round(j['emptied_passes_per_token'], 2), 'went on', round(j['went_on'], 3))"
empty_twice $m models/dory-tiny 128 attend gemv_combine gemv_glu_residual gemv_residual gemv
