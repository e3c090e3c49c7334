#!/usr/bin/env bash
# 2026-12-06, tenth session, call 1. The tensor-core attention with its queries' parts held
# through a chunk's tiles (attend_coop.wgsl's HOLD; DORY_WGPU_COOP_HOLD=0 loads them at each
# tile, as before), in main's one-subgroup form (this binary: 0165a0e with HOLD, a change
# taken out again after this call, so not in the history) and in the four-subgroup form
# of 4dfbf03 (.wgpu-carry/dory-coop4h, built in a worktree of that commit with the same
# change; dory-coop4 the commit as it was): their GPU tests, pp512 of the larger config at
# depths 4096 and 0 and of dory-tiny against attend_rows, two rounds, and the GPU's time by
# kernel at 4096. Then bench/logs/h200-2026-12-06a/call-3.sh's A/B, which no machine ran
# (this binary, d1540b1's caches' spare buffers, against ee4a49f at depth 0 and on
# dory-tiny), and where dory-tiny's token goes under its rule. Built with
# `bench/wgpu_h200.sh build`; carry .gl and .wgpu-carry.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for t in gpu-tests gpu-tests-coop4h; do
    CI=true timeout 120 .wgpu-carry/$t --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/$t.log
    echo "== $t"; grep -E "test result|panicked|FAILED" $o/a/$t.log | head -20
done
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
b() { # label binary env... (M, D, R set)
    local label=$1 bin=$2; shift 2
    env "$@" timeout 60 $bin bench --backend wgpu --model $M --depth $D --reps $R --prompt 512 --gen 0 \
        --attention exact --json 2>&1 | grep -v XDG_RUNTIME | sed "s/^/$label /" | tee -a $o/a/bench.jsonl \
        | python3 -c "import json,sys
for l in sys.stdin:
    k, _, j = l.partition(' ')
    try: j = json.loads(j)
    except ValueError: print(l.rstrip()); continue
    print(k, '$M', 'depth $D', 'pp', round(j['pp']['median']), round(j['pp']['min']), round(j['pp']['max']))" \
        | tee -a $o/a/summary.txt
}
c4=.wgpu-carry/dory-coop4
c4h=.wgpu-carry/dory-coop4h
for round in 1 2; do
    M=$large D=4096 R=1
    b rows $dory DORY_WGPU_ATTEND_COOP=0
    b main-hold $dory DORY_WGPU_ATTEND_COOP=1
    b main-load $dory DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_HOLD=0
    b coop4 $c4 DORY_WGPU_ATTEND_COOP=1
    b coop4-hold $c4h DORY_WGPU_ATTEND_COOP=1
    M=$large D=0 R=2
    b rows $dory DORY_WGPU_ATTEND_COOP=0
    b main-hold $dory DORY_WGPU_ATTEND_COOP=1
    b coop4-hold $c4h DORY_WGPU_ATTEND_COOP=1
    M=models/dory-tiny D=0 R=3
    b rows $dory DORY_WGPU_ATTEND_COOP=0
    b coop4-hold $c4h DORY_WGPU_ATTEND_COOP=1
done
p() { # label binary env...
    local label=$1 bin=$2; shift 2
    echo "== $label $*" >> $o/a/profile.txt
    env "$@" DORY_WGPU_PROFILE=1 timeout 60 $bin bench --backend wgpu --model $large --depth 4096 --reps 1 \
        --prompt 512 --gen 0 --attention exact 2>&1 | grep -E "^pp|attend|prep|kv_parts" >> $o/a/profile.txt
}
p main-hold $dory DORY_WGPU_ATTEND_COOP=1
p main-load $dory DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_HOLD=0
p coop4-hold $c4h DORY_WGPU_ATTEND_COOP=1
p coop4 $c4 DORY_WGPU_ATTEND_COOP=1
cat $o/a/profile.txt
OUT=$o bash bench/logs/h200-2026-12-06a/call-3.sh
# Where a token goes under dory-tiny's rule (the step recorded whole ahead of its token).
for prof in host 1; do
    DORY_WGPU_PROFILE=$prof timeout 40 $dory bench --backend wgpu --model models/dory-tiny --reps 2 --prompt 512 \
        --gen 128 --exit kl:0.05 2>&1 | grep -v XDG_RUNTIME | tee $o/b/profile_tiny_rule_$prof.txt
done
