#!/usr/bin/env bash
# 2026-12-06, eleventh session, call 1. A decoded row's loop entered in the dispatch that
# embeds its token (after the greedy choice, in the same workgroup), and each pass closed
# (its last residual and the loop's edge) by the op after it: the next pass's first
# projection, or the head of a read-out or of the last pass. This binary against 5e5226e
# (the last stop), two rounds interleaved: dory-tiny's decode (tg128 after pp512) in its
# default mode (O(1)) and exact, under its rule and with all passes; the larger config's
# decode at depth 0 (tg64 after 16 tokens); this binary also with the edge apart from the
# head, and with no edge fused (DORY_WGPU_FUSE). Then `dory generate` on the shipped model,
# 500 tokens, greedy and sampled, and both binaries' GPU time by kernel for dory-tiny's
# decode under its rule. Built with `bench/wgpu_h200.sh build 5e5226e`; carry .gl and
# .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
old=.wgpu-carry/dory-5e5226e
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 150 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/gpu-tests.log
grep -E "test result|panicked|FAILED" $o/a/gpu-tests.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
run() { # label bin model depth attention exit prompt gen reps [env...]
    local label=$1 bin=$2 m=$3 depth=$4 att=$5 ex=$6 pr=$7 gen=$8 reps=$9
    shift 9
    env "$@" timeout 120 $bin bench --backend wgpu --model $m --depth $depth --attention $att --exit $ex --prompt $pr \
        --gen $gen --reps $reps --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" | tee -a $o/a/bench.jsonl \
        | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, '$m depth $depth $att exit $ex tg', [round(j['tg'][x], 1) for x in ('median', 'min', 'max')],
          'passes', round(j['passes_per_token'], 2), 'pp', round(j['pp']['median']))" | tee -a $o/a/summary.txt
}
base=prep,residual,split,combine
for round in 1 2; do
    for v in "new $dory" "old $old" "no-head $dory DORY_WGPU_FUSE=$base,edge" "no-edge $dory DORY_WGPU_FUSE=$base"; do
        set -- $v
        run $1 $2 models/dory-tiny 0 o1 kl:0.05 512 128 3 ${3:-}
        run $1 $2 models/dory-tiny 0 o1 none 512 128 3 ${3:-}
        run $1 $2 models/dory-tiny 0 exact kl:0.05 512 128 3 ${3:-}
        run $1 $2 models/dory-tiny 0 exact none 512 128 3 ${3:-}
        run $1 $2 $large 0 exact none 16 64 2 ${3:-}
    done
done
MODEL=models/dory-tiny BINARIES="new=$dory old=$old" TOKENS=500 ARGS="--backend wgpu" OUT=$o/a \
    timeout 120 bash bench/generate_speed.sh 2 2>&1 | grep -v XDG_RUNTIME | tail -12
for bin in $dory $old; do
    echo "== $bin" >> $o/a/profile.txt
    DORY_WGPU_PROFILE=1 timeout 60 $bin bench --backend wgpu --model models/dory-tiny --prompt 16 --gen 128 --reps 1 \
        --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
done
