#!/usr/bin/env bash
# 2026-12-06, twelfth session, call 4: attend.wgsl with fewer barriers (the query's and the
# key's norms in one reduction; a tile's maximum and sum from runs of 32 invocations' own,
# meeting at one barrier) (this binary) against this stop without it (9fed2a5). The GPU
# tests, then decode interleaved, two rounds: the larger config at depth 0, 4096 (exact) and
# 32768 (O(1)), dory-tiny with all passes, exact and O(1); then each by kernel, dory-tiny
# and the larger config at depth 0. Built with `bench/wgpu_h200.sh build 9fed2a5`; carry .gl
# and .wgpu-carry.
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
    for v in "new .wgpu-carry/dory" "base .wgpu-carry/dory-9fed2a5"; do
        set -- $v
        run $1 $2 $large 0 exact 16 64 2
        run $1 $2 $large 4096 exact 16 64 1
        run $1 $2 $large 32768 o1 16 64 1
        run $1 $2 models/dory-tiny 0 exact 512 128 3
        run $1 $2 models/dory-tiny 0 o1 512 128 3
    done
done
for v in "new .wgpu-carry/dory" "base .wgpu-carry/dory-9fed2a5"; do
    set -- $v
    for m in models/dory-tiny $large; do
        echo "== $1 $m depth 0" >> $o/a/profile.txt
        DORY_WGPU_PROFILE=1 timeout 60 $2 bench --backend wgpu --model $m --prompt 16 --gen 32 \
            --reps 1 --exit none --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
    done
done
