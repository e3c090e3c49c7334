#!/usr/bin/env bash
# 2026-12-06, ninth session: the branch attend-coop-4's tensor-core attention (4dfbf03: four
# subgroups a block of 16 rows in step over the same tiles, the weights written a run of 32
# halves at a time, the tile's e_j in workgroup memory), built in a worktree of that commit
# with `bench/wgpu_h200.sh build` and carried as .wgpu-carry/dory-coop4 and gpu-tests-coop4
# (bench/logs/h200-2026-12-05b/call-2.sh's plan, which no machine ran): its GPU tests, also
# with the weights through workgroup memory (variant 4); pp512 of the larger config at 4096
# under attend_rows, main's attend_coop (this binary) and the branch's forms and diagnostics
# (1: no value sums' products, 2: no scores' products, 3: neither), at depth 0, and
# dory-tiny's; the GPU's time by kernel at 4096. First, this session's change (the caches'
# spare buffers, ring slots kept where they stay): main's GPU tests, then the larger config's
# pp512 + tg64 at depth 4096 (3 reps), against ee4a49f (the last stop), two rounds.
cd "$(dirname "$0")/../../.."  # the repository root
o=$OUT
mkdir -p $o/a
source bench/device_setup.sh
coop=.wgpu-carry/dory-coop4
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
CI=true timeout 120 .wgpu-carry/gpu-tests --test-threads 4 2>&1 | grep -v XDG_RUNTIME > $o/a/wgpu_tests_main.log
echo "== main"; grep -E "test result|panicked|FAILED" $o/a/wgpu_tests_main.log | head -20
large=/tmp/wgpu-large
timeout 100 $dory init --config bench/wgpu-large.json --seed 1 --dtype f16 --out $large >/dev/null
for round in 1 2; do
    for bin in $dory .wgpu-carry/dory-ee4a49f; do
        timeout 60 $bin bench --backend wgpu --model $large --depth 4096 --reps 3 --prompt 512 --gen 64 \
            --attention exact --json 2>&1 | grep -v XDG_RUNTIME | tee -a $o/a/spares.jsonl | python3 -c "import json,sys
for l in sys.stdin:
    try: j = json.loads(l)
    except ValueError: print(l.rstrip()); continue
    print('$bin depth 4096 pp', [round(j['pp'][k]) for k in ('median', 'min', 'max')], 'tg', [round(j['tg'][k], 1) for k in ('median', 'min', 'max')])" \
            | tee -a $o/a/summary.txt
    done
done
for v in 0 4; do
    DORY_WGPU_COOP_VARIANT=$v CI=true timeout 120 .wgpu-carry/gpu-tests-coop4 --test-threads 4 2>&1 | grep -v XDG_RUNTIME \
        > $o/a/wgpu_tests_v$v.log
    echo "== variant $v"; grep -E "test result|panicked|FAILED" $o/a/wgpu_tests_v$v.log | head -20
done
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
for round in 1 2; do
    M=$large D=4096 R=1
    b rows $dory DORY_WGPU_ATTEND_COOP=0
    b main-coop $dory DORY_WGPU_ATTEND_COOP=1
    for v in 0 4 1 2 3; do b coop4-v$v $coop DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_VARIANT=$v; done
    M=$large D=0 R=2
    b rows $dory DORY_WGPU_ATTEND_COOP=0
    for v in 0 4; do b coop4-v$v $coop DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_VARIANT=$v; done
    M=models/dory-tiny D=0 R=3
    b rows $dory DORY_WGPU_ATTEND_COOP=0
    for v in 0 4; do b coop4-v$v $coop DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_VARIANT=$v; done
done
prof() { # label binary env...
    local label=$1 bin=$2; shift 2
    echo "== $label $*" >> $o/a/profile.txt
    env "$@" DORY_WGPU_PROFILE=1 timeout 60 $bin bench --backend wgpu --model $large --depth 4096 --reps 1 \
        --prompt 512 --gen 0 --attention exact 2>&1 | grep -v XDG_RUNTIME | grep -E 'pp512|attend|kv_parts|prep' >> $o/a/profile.txt
}
prof rows $dory DORY_WGPU_ATTEND_COOP=0
for v in 0 4; do prof coop4 $coop DORY_WGPU_ATTEND_COOP=1 DORY_WGPU_COOP_VARIANT=$v; done
cat $o/a/profile.txt
