#!/usr/bin/env bash
# Runs every test of the project, Rust and Python, installing what they need first.
# Usage: scripts/test.sh   (from anywhere; CI runs it through .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

step() { printf '\n== %s (%s)\n' "$1" "$(date +%T)"; }

# System packages the tests need (a software Vulkan driver for the GPU tests, a
# browser for the web page's test), where apt can install them.
need=()
for pkg in mesa-vulkan-drivers libvulkan1 chromium; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if ((${#need[@]})); then
    step "installing ${need[*]}"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    else
        echo "missing system packages: ${need[*]} (install them, e.g. sudo apt-get install ${need[*]})" >&2
        exit 1
    fi
fi

step "python environment"
# torch with the NVIDIA libraries it imports is 3.6 GB installed; pip's cache would hold
# another 2.3 GB of wheels that nothing reads again, on machines where disk can be short.
export PIP_NO_CACHE_DIR=1
df -h . | awk 'NR == 2 { print "disk: " $4 " free on " $6 }'
python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --upgrade pip
# --no-deps: train/requirements.txt is complete and flat (it says why).
python -m pip install -q --no-deps -r train/requirements.txt
python -m pip install -q -r requirements-test.txt

# Tests run in the release profile: one build serves the tests, the binary the Python
# tests spawn (DORY_BIN) and the speed a user sees; debug assertions are tested by plain
# `cargo test` during development.
step "rust: build, lints and tests"
# Clippy lints the workspace's crates as they are built for the tests (clippy-driver as
# the workspace's rustc, cargo clippy's own way in), so that every target is compiled
# once: a separate `cargo clippy --all-targets` compiled them, and every dependency, a
# second time (4.5 of CI's 30 minutes). `cargo test` builds every target clippy's
# --all-targets checks (libraries, binaries, tests, examples; the workspace has no benches).
# The variables are set for this command alone: the fuzz step's nightly build must not
# take the stable toolchain's driver.
clippy_driver=$(rustc --print sysroot)/bin/clippy-driver
lint=()
if [ -x "$clippy_driver" ]; then
    lint=(env RUSTC_WORKSPACE_WRAPPER="$clippy_driver" CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__)
else
    echo "no clippy-driver in the toolchain: clippy runs on its own after the tests"
fi
"${lint[@]}" cargo test --release --workspace --locked
# The CLI's tests built the binary (a second `cargo build` would rebuild dependencies for
# the features without the dev-dependencies' and change nothing the tests see).
export DORY_BIN=$root/target/release/dory
[ -x "$DORY_BIN" ] || { echo "cargo test did not build $DORY_BIN" >&2; exit 1; }

if [ ! -x "$clippy_driver" ]; then
    step "rust: clippy"
    cargo clippy --workspace --all-targets --locked -- -D warnings
fi

step "fuzz: every target for a short bounded time"
# libFuzzer needs the nightly toolchain and cargo-fuzz; without them the stable run of
# every target over its corpus (cargo test -p dory-fuzz, above) stands in.
if command -v cargo-fuzz >/dev/null && cargo +nightly --version >/dev/null 2>&1; then
    scripts/fuzz.sh "${DORY_FUZZ_SECONDS:-15}"
else
    echo "no cargo-fuzz or nightly toolchain: libFuzzer runs skipped (docs/RELIABILITY.md)"
fi

step "python: tests"
# Exit code 5 is "no tests collected", which is not a failure of the code.
suites=(train)
[ -d tests/python ] && suites+=(tests/python)
python -m pytest -q "${suites[@]}" || { rc=$?; [ "$rc" = 5 ] || exit "$rc"; }

step "all tests passed"
