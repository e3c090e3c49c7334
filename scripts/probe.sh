#!/usr/bin/env bash
# A hostile re-probe of issue 13's kinds (docs/RELIABILITY.md): each case must end with a
# one-line named error (or success), never a panic, a signal, a hang (timeout 20 s) or a
# file lost or written outside its folder. Runs in a temporary folder; exits 1 on a bad case.
# Usage: scripts/probe.sh   (DORY_BIN: the binary, default target/release/dory)
root=$(cd "$(dirname "$0")/.." && pwd)
D=$(realpath "${DORY_BIN:-$root/target/release/dory}")
M=$root/models/dory-tiny
cd "$(mktemp -d)" || exit 1
bad=0
case_() { # name, command...
    local name=$1; shift
    out=$(timeout 20 "$@" 2>&1); rc=$?
    verdict=ok
    if [ $rc -ge 124 ]; then verdict="HANG/SIGNAL rc=$rc"; bad=1; fi
    if echo "$out" | grep -q "panicked\|RUST_BACKTRACE\|overflow"; then verdict="PANIC"; bad=1; fi
    printf '%-34s rc=%-3s %-6s %s\n' "$name" "$rc" "$verdict" "$(echo "$out" | grep -v '^$' | tail -1 | cut -c1-150)"
}
mk() { # name, jq-like python edit of config
    rm -rf "m-$1"; mkdir "m-$1"; cp $M/model.safetensors $M/tokenizer.json "m-$1/"
    python3 -c "import json,sys; c=json.load(open('$M/config.json')); $2; json.dump(c,open('m-$1/config.json','w'))"
}
mk window "c['window']=10**12"; case_ "huge window" $D generate --model m-window --max-tokens 2 hi
mk passes "c['passes']=10**9"; case_ "huge passes" $D generate --model m-passes --max-tokens 2 hi
mk ctx "c['max_context']=2**62"; case_ "huge max_context" $D info --model m-ctx
mk neg "c['hidden']=-1"; case_ "negative hidden" $D info --model m-neg
mk lm "c['o1']['landmarks']=10**9"; case_ "huge landmarks" $D generate --model m-lm --attention o1 --max-tokens 2 hi
case_ "bench depth beyond memory" $D bench --model $M --depth 1000000000000 --prompt 4 --gen 1
case_ "threads absurd" $D --threads 100000000 generate --model $M --max-tokens 2 hi
case_ "info huge context" $D info --model $M --context 18446744073709551615
case_ "exit rule garbage" $D generate --model $M --exit "kl:nan" --max-tokens 2 hi
case_ "o1 option garbage" $D generate --model $M --o1 "landmarks=-3" --max-tokens 2 hi
case_ "temperature inf" $D generate --model $M --temperature inf --max-tokens 2 hi
case_ "top-p 2" $D generate --model $M --top-p 2 --max-tokens 2 hi
mkdir -p m-fifo; cp $M/model.safetensors $M/tokenizer.json m-fifo/; rm -f m-fifo/config.json; mkfifo m-fifo/config.json
case_ "config.json is a FIFO" $D info --model m-fifo
mkdir -p m-dev; cp $M/config.json $M/tokenizer.json m-dev/; ln -sf /dev/zero m-dev/model.safetensors
case_ "weights link to /dev/zero" $D info --model m-dev
mkdir -p m-trunc; cp $M/config.json $M/tokenizer.json m-trunc/; head -c 100000 $M/model.safetensors > m-trunc/model.safetensors
case_ "truncated weights" $D generate --model m-trunc --max-tokens 2 hi
mkdir -p m-bigcfg; cp $M/model.safetensors $M/tokenizer.json m-bigcfg/; python3 -c "print('{\"a\":' + ' '*300000000 + '1}')" > m-bigcfg/config.json
case_ "config.json of 300 MB" $D info --model m-bigcfg
mkdir -p full; echo keep > full/notes.txt
case_ "init into a non-empty folder" $D init --config $M/config.json --out full
[ "$(cat full/notes.txt)" = keep ] && echo "  notes.txt kept" || { echo "  notes.txt LOST"; bad=1; }
mkdir -p linky; ln -sf "$PWD/outside.txt" linky/config.json
case_ "init through a symlink" $D init --config $M/config.json --out linky --force
[ -e outside.txt ] && { echo "  WROTE THROUGH THE LINK"; bad=1; } || echo "  nothing written outside"
case_ "logits to an unwritable path" $D generate --model $M --max-tokens 2 --logits /proc/nope/x.bin hi
case_ "5,000 words (max_context 1,024)" $D generate --model $M --max-tokens 2 "$(python3 -c "print('word ' * 5000)")"
echo "bad=$bad"
exit $bad
