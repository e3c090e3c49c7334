#!/usr/bin/env bash
# What a user of `dory generate` gets: decode speed as `--stats` reports it, with the sampler,
# the detokenizer and the streamed text on each token's path (`dory bench` decodes greedily
# and prints nothing). Each binary under each sampling, interleaved round by round; medians.
#
#   MODEL=DIR BINARIES="name=path …" bench/generate_speed.sh [ROUNDS]
#
# SAMPLINGS: "default" (the CLI's: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05) and
# "greedy" (-t 0) by default; ARGS: more options for every run (e.g. "--backend wgpu --exit
# none"); TOKENS: tokens generated (default 128). Records go to $OUT/generate_speed.jsonl
# (OUT defaults to bench/out).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
: "${MODEL:?the model folder}"
BINARIES=${BINARIES:-dory=target/release/dory}
SAMPLINGS=${SAMPLINGS:-default greedy}
TOKENS=${TOKENS:-128}
out=${OUT:-bench/out}
mkdir -p "$out"
log="$out/generate_speed.jsonl"
this=$(mktemp)
trap 'rm -f "$this"' EXIT
prompt="The quick brown fox jumps over the lazy dog. Once upon a time, in a land far away, there lived"
for round in $(seq "$rounds"); do
    for b in $BINARIES; do
        for s in $SAMPLINGS; do
            case $s in
                default) opts=() ;;
                greedy) opts=(-t 0) ;;
                *) echo "unknown sampling $s" >&2; exit 2 ;;
            esac
            # --stats prints one line to stderr: "… | decode: N tokens, R tokens/s | …".
            stats=$("${b#*=}" generate --model "$MODEL" --stats --no-echo -n "$TOKENS" --seed "$round" \
                "${opts[@]}" ${ARGS:-} "$prompt" 2>&1 >/dev/null | grep 'decode:' || true)
            rate=$(sed -n 's/.*decode: \([0-9]*\) tokens, \([0-9.]*\) tokens\/s.*/\2/p' <<<"$stats")
            tokens=$(sed -n 's/.*decode: \([0-9]*\) tokens.*/\1/p' <<<"$stats")
            printf '{"binary":"%s","sampling":"%s","round":%d,"decode_tokens":%s,"decode_tok_s":%s,"args":"%s"}\n' \
                "${b%%=*}" "$s" "$round" "${tokens:-null}" "${rate:-null}" "${ARGS:-}" | tee -a "$log" "$this"
        done
    done
done
python3 - "$this" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    if r["decode_tok_s"] is not None:
        by.setdefault((r["args"], r["binary"], r["sampling"]), []).append(r["decode_tok_s"])
print("| args | binary | sampling | decode tok/s, median (range) |")
print("| --- | --- | --- | --- |")
for (a, b, s), v in by.items():
    print(f"| {a} | {b} | {s} | {statistics.median(v):,.1f} ({min(v):,.1f}–{max(v):,.1f}) |")
EOF
