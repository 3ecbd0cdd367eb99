#!/usr/bin/env bash
# Fuzzes the frame decoder and the handshake (issue 29): N inputs (default
# 10^6) through libFuzzer (cargo +nightly fuzz), then N through the stable
# mutator test, each with its count and duration. Any crash libFuzzer finds
# is left in fuzz/artifacts/frames/ and stops the script: make it a
# regression test (protocol/src/fuzzing.rs's seeds, or a unit test).
#   scripts/fuzz.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}

if ! command -v cargo-fuzz >/dev/null; then
  echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
  exit 2
fi
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "no nightly toolchain: cargo fuzz needs one (rustup toolchain install nightly)" >&2
  exit 2
fi

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
cargo run --quiet --release --manifest-path fuzz/Cargo.toml --bin write-seeds -- "$corpus"
echo "== libFuzzer: $runs inputs (fuzz/fuzz_targets/frames.rs), from $(ls "$corpus" | wc -l) seeds"
log=$(mktemp)
start=$(date +%s.%N)
status=0
cargo +nightly fuzz run frames "$corpus" -- \
  -runs="$runs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  >"$log" 2>&1 || status=$?
end=$(date +%s.%N)
grep -E '^(Done|INFO: Seed|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+== ERROR|SUMMARY)|panicked|assertion' "$log" || true
rm -f "$log"
printf 'libFuzzer: exit %s after %.1f s\n' "$status" "$(echo "$end - $start" | bc)"
[ "$status" = 0 ] || { echo "libFuzzer found a failing input: see fuzz/artifacts/frames/" >&2; exit 1; }

echo "== stable mutator: $runs inputs (protocol/tests/fuzz_frames.rs)"
STAGEBENCH_FUZZ_INPUTS="$runs" cargo test --quiet --release -p stagebench-protocol \
  --test fuzz_frames -- --nocapture 2>&1 | grep -E 'inputs in|test result|panicked'
