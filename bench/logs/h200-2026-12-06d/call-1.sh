#!/usr/bin/env bash
# 2026-12-06, twelfth session, call 1: a decoded row's attention with one round trip a tile
# (attend.wgsl loads a tile's keys and values at once, the first tile's before prep) and its
# chunks joined in one walk (combine.wgsl) (fcb1493), and with the greedy token's argmax
# keeping eight loads in flight (this binary), against the last stop's (9a78359). The GPU
# tests, then decode interleaved, two rounds: the larger config at depth 0, 4096 (exact)
# and 32768 (O(1)), dory-tiny with all passes; then this binary's and the last stop's by
# kernel, the larger config at depth 0 and 4096. Built with `bench/wgpu_h200.sh build
# 9a78359`, then `build fcb1493`; carry .gl and .wgpu-carry.
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
    for v in "new .wgpu-carry/dory" "attend .wgpu-carry/dory-fcb1493" "old .wgpu-carry/dory-9a78359"; do
        set -- $v
        run $1 $2 $large 0 exact 16 64 2
        run $1 $2 $large 4096 exact 16 64 1
        run $1 $2 $large 32768 o1 16 64 1
        run $1 $2 models/dory-tiny 0 exact 512 128 3
    done
done
for v in "new .wgpu-carry/dory" "old .wgpu-carry/dory-9a78359"; do
    set -- $v
    for depth in 0 4096; do
        echo "== $1 depth $depth" >> $o/a/profile.txt
        DORY_WGPU_PROFILE=1 timeout 60 $2 bench --backend wgpu --model $large --depth $depth --prompt 16 --gen 32 \
            --reps 1 --exit none --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
    done
done
