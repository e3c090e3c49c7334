#!/usr/bin/env bash
# 2026-12-06, twelfth session, call 5: the residual's two sums in one reduction (ngpt.wgsl;
# every one-row projection that forms its x from the residual, and residual.wgsl, mix.wgsl)
# (this binary) against the stop before it (687f272). The GPU tests, then decode
# interleaved, two rounds: the larger config at depth 0, dory-tiny with all passes, exact
# and O(1). Built with `bench/wgpu_h200.sh build 687f272`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
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
for round in 1 2; do
    for v in "new .wgpu-carry/dory" "base .wgpu-carry/dory-687f272"; do
        set -- $v
        run $1 $2 $large 0 exact 16 64 2
        run $1 $2 models/dory-tiny 0 exact 512 128 3
        run $1 $2 models/dory-tiny 0 o1 512 128 3
    done
done
