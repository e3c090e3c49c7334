#!/usr/bin/env bash
# The CPU backend's speed benchmark: a random model of the benchmark config (f32 weights), prefill
# of a 512-token prompt (pp512) and decode (tg128), ROUNDS interleaved runs of
# `dory bench`, medians over all repetitions. The machine drifts from minute to minute,
# so runs of what is compared are interleaved rather than back to back.
# Usage: bench/cpu_speed.sh [ROUNDS]   (writes bench/out/cpu_speed.jsonl)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
cargo build --release -q -p dory-cli
dory=target/release/dory
mkdir -p bench/out
model=bench/out/bench-cpu-f32
[ -f $model/config.json ] || $dory init --config bench/configs-bench-cpu.json --seed 1 --out $model >/dev/null
out=bench/out/cpu_speed.jsonl
: > $out
for r in $(seq "$rounds"); do
    $dory bench --backend cpu --model $model --prompt 512 --gen 128 --reps 3 --json >> $out
done
python3 - "$out" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
pp = [r["pp"]["median"] for r in runs]
tg = [r["tg"]["median"] for r in runs]
print(f"commit {runs[0]['commit']}, {len(runs)} rounds × {runs[0]['reps']} reps, {runs[0]['backend']}")
print(f"pp512: median {statistics.median(pp):.0f} tokens/s (rounds {min(pp):.0f}–{max(pp):.0f})")
print(f"tg128: median {statistics.median(tg):.1f} tokens/s (rounds {min(tg):.1f}–{max(tg):.1f})")
print(f"peak RSS: {max(r['peak_rss_bytes'] for r in runs) / 2**20:.0f} MiB")
PY
