#!/usr/bin/env bash
# 2026-12-06, eleventh session, call 7: a one-row projection whose prologue forms its x (the
# residual, the attention's join, a pass's close) loaded one round of its weights (4 pieces
# an invocation) before the prologue, so that the larger config's q|k|v|gate and gate|up
# (rows of 2,048: 8 and 16 pieces an invocation) waited on the prologue with half or a
# quarter of their weights in flight. DORY_WGPU_ROUNDS=2 loads two rounds before it (and
# walks 8 pieces a round after). The GPU tests under it, then decode against the default,
# four rounds interleaved: the larger config at depth 0 and 4096 (exact), dory-tiny with all
# passes (its rows of 384 fit one round: no change expected); then both by kernel, the
# larger config at depth 0. Built with `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
DORY_WGPU_ROUNDS=2 CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # label model depth prompt gen reps [env...]
    local label=$1 m=$2 depth=$3 pr=$4 gen=$5 reps=$6
    shift 6
    env "$@" timeout 120 $dory bench --backend wgpu --model $m --depth $depth --attention exact --exit none \
        --prompt $pr --gen $gen --reps $reps --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" \
        | tee -a $o/a/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, '$m depth $depth tg', [round(j['tg'][x], 1) for x in ('median', 'min', 'max')])" | tee -a $o/a/summary.txt
}
for round in 1 2 3 4; do
    for v in "rounds-1 DORY_WGPU_ROUNDS=1" "rounds-2 DORY_WGPU_ROUNDS=2"; do
        set -- $v
        run $1 $large 0 16 64 2 $2
        run $1 $large 4096 16 64 1 $2
        run $1 models/dory-tiny 0 512 128 3 $2
    done
done
for r in 1 2; do
    echo "== rounds $r" >> $o/a/profile.txt
    DORY_WGPU_ROUNDS=$r DORY_WGPU_PROFILE=1 timeout 60 $dory bench --backend wgpu --model $large --prompt 16 --gen 32 \
        --reps 1 --exit none --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
