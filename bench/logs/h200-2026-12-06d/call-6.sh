#!/usr/bin/env bash
# 2026-12-06, twelfth session, call 6: call 5's binaries deeper: the larger config at depth
# 4096 (exact) and 32768 (O(1)), each binary once, then dory-tiny under its rule (exact and
# O(1)) with this binary. No tests (call 5 ran them on this binary). Built as call 5's;
# carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # label binary model depth attention prompt gen reps
    local label=$1 bin=$2 m=$3 depth=$4 att=$5 pr=$6 gen=$7 reps=$8
    timeout 120 $bin bench --backend wgpu --model $m --depth $depth --attention $att --exit none \
        --prompt $pr --gen $gen --reps $reps --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" \
        | tee -a $o/a/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, '$m depth $depth $att tg', [round(j['tg'][x], 1) for x in ('median', 'min', 'max')])" | tee -a $o/a/summary.txt
}
for v in "new .wgpu-carry/dory" "base .wgpu-carry/dory-687f272"; do
    set -- $v
    run $1 $2 $large 4096 exact 16 64 1
    run $1 $2 $large 32768 o1 16 64 1
done
for att in exact o1; do
    timeout 100 $dory bench --backend wgpu --model models/dory-tiny --attention $att --exit kl:0.05 --prompt 512 \
        --gen 128 --reps 3 --json 2>&1 | grep -v XDG_RUNTIME | tee -a $o/a/bench.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    try: j = json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('new dory-tiny $att kl:0.05 tg', [round(j['tg'][k], 1) for k in ('median', 'min', 'max')],
          'passes', round(j['passes_per_token'], 2))" | tee -a $o/a/summary.txt
done
