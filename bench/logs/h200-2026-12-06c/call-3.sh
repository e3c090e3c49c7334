#!/usr/bin/env bash
# 2026-12-06, eleventh session, call 3 (the second that ran; call-2.sh waits for an H200):
# call 1's binaries again. dory-tiny's decode under its rule is too noisy in call 1 to say
# what the read-out's head costs with the pass's close in it: this binary against itself
# with the close apart from the head (DORY_WGPU_FUSE without "head") and against 5e5226e,
# three rounds interleaved, 5 reps of tg256 after pp64 each, exact and O(1); then the GPU's
# time by kernel of each binary and setting, dory-tiny with all passes and under its rule,
# and the larger config's decode at depth 0. Carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
old=.wgpu-carry/dory-5e5226e
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
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
          'passes', round(j['passes_per_token'], 2))" | tee -a $o/a/summary.txt
}
base=prep,residual,split,combine
for round in 1 2 3; do
    for v in "new $dory" "no-head $dory DORY_WGPU_FUSE=$base,edge" "old $old"; do
        set -- $v
        run $1 $2 models/dory-tiny 0 o1 kl:0.05 64 256 5 ${3:-}
        run $1 $2 models/dory-tiny 0 exact kl:0.05 64 256 5 ${3:-}
    done
done
prof() { # label bin model exit gen [env...]
    local label=$1 bin=$2 m=$3 ex=$4 gen=$5
    shift 5
    echo "== $label $m exit $ex $*" >> $o/a/profile.txt
    env "$@" DORY_WGPU_PROFILE=1 timeout 60 $bin bench --backend wgpu --model $m --prompt 16 --gen $gen --reps 1 \
        --exit $ex --attention exact 2>&1 | grep -v XDG_RUNTIME >> $o/a/profile.txt
}
for v in "new $dory" "no-head $dory DORY_WGPU_FUSE=$base,edge" "no-edge $dory DORY_WGPU_FUSE=$base" "old $old"; do
    set -- $v
    prof $1 $2 models/dory-tiny none 128 ${3:-}
    prof $1 $2 models/dory-tiny kl:0.05 128 ${3:-}
    prof $1 $2 $large none 32 ${3:-}
done
