#!/usr/bin/env bash
# 2026-12-07, twentieth session, call 7 (not run: too little device time was left to start a
# machine; for the next session's first call): the eighteenth session's call 1d again with
# main's new defaults (the checks off, the subgroup a constant): each decode kernel
# dispatched with no workgroups (DORY_WGPU_EMPTY) and twice in a row (DORY_WGPU_TWICE), so
# that the next session knows which kernels' bodies the knobs shortened and which stay far
# from their floors (exact, all passes, depth 0, one run each); then a decoded row's attention
# in one chunk, without combine (main's binary, knobs that exist). The measuring binary: main plus
# bench/logs/h200-2026-12-07/measure-3-main.patch, built with
#   bash bench/wgpu_h200.sh build $(git rev-parse --short HEAD) bench/logs/h200-2026-12-07/measure-3-main.patch
# (carry .gl and .wgpu-carry).
cd "$(dirname "$0")/../../.."  # the repository root
source bench/device_setup.sh
large_model
m=$(ls .wgpu-carry/dory-*-measure-3-main | head -1)
empty_twice $m models/dory-tiny 128 attend gemv_combine gemv_glu_residual gemv_residual gemv
empty_twice $m $large 64 attend combine gemv gemv_residual gemv_glu_residual
# A decoded row's attention in one chunk (direct: no combine, the walk ~9 tiles long at depth
# 0) against the default 18 chunks of 32 keys and a combine, with tiles of 64, 128 and 32 keys
# (LANES 4, 2, 8): does a stage less pay for the longer walk?
for round in 1 2; do
    bench_knob default .wgpu-carry/dory $large 64
    bench_knob direct .wgpu-carry/dory $large 64 DORY_WGPU_ATTEND_PER 4096
    (export DORY_WGPU_ATTEND_PER=4096 DORY_WGPU_ATTEND_LANES=2; bench_knob direct-l2 .wgpu-carry/dory $large 64)
    (export DORY_WGPU_ATTEND_PER=4096 DORY_WGPU_ATTEND_LANES=8; bench_knob direct-l8 .wgpu-carry/dory $large 64)
    bench_run rule-default .wgpu-carry/dory models/dory-tiny 0 exact kl:0.05 512 128 3 120
    (export DORY_WGPU_ATTEND_PER=4096; bench_run rule-direct .wgpu-carry/dory models/dory-tiny 0 exact kl:0.05 512 128 3 120)
done
# How many recent tokens a step's recorded passes follow (DORY_WGPU_GATE=N; 0 records every
# pass): the bench's random tokens need 4 passes more often than text does, so fewer may pay
# there; `dory bench` now reports the passes emptied and the tokens that went on.
for round in 1 2; do
    for n in 16 0 4 8 32; do
        (export DORY_WGPU_GATE=$n; bench_run rule-gate$n .wgpu-carry/dory models/dory-tiny 0 exact kl:0.05 512 128 3 120)
    done
done
grep -h '"went_on"' $OUT/a/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' '); j = json.loads(j)
    print(k, round(j['tg']['median'], 1), 'emptied', round(j['emptied_passes_per_token'], 2), 'went on', round(j['went_on'], 3))"
