#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (default 60) on the nightly toolchain
# with cargo-fuzz, and prints executions and crashes per target (docs/RELIABILITY.md).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET…]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if ((${#targets[@]} == 0)); then
    targets=(config safetensors index tokenizer exit o1 sampling request generate)
fi
root=$PWD
crashed=0
cd fuzz
for t in "${targets[@]}"; do
    work=$root/target/fuzz-corpus/$t
    mkdir -p "$work"
    log=$root/target/fuzz-corpus/$t.log
    # The first folder receives new inputs; the committed seeds are only read.
    status=0
    cargo +nightly fuzz run "$t" "$work" "corpus/$t" -- -max_total_time="$seconds" -rss_limit_mb=4096 \
        -timeout=20 -print_final_stats=1 >"$log" 2>&1 || status=$?
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    if [ "$status" = 0 ]; then
        printf '%-12s %10s executions  no crash\n' "$t" "$execs"
    else
        printf '%-12s %10s executions  CRASH: see %s\n' "$t" "$execs" "$log"
        crashed=1
    fi
done
exit "$crashed"
