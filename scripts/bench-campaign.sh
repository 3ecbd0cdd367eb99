#!/usr/bin/env bash
# The cold/resume campaign (scripts/campaigns/cold-resume.toml) at a given
# scale: cold, resume (load and recompute) and two interrupted steps, with
# the judgment it prints. SCALE=small uses the built-in cohort as it is;
# other scales are generated and frozen once into the bench directory
# (as scripts/bench-cold-prep.sh does). Run by hand on an otherwise idle
# machine; not part of CI. The campaign directory is kept and printed.
#
#   SCALE=seed TRIALS=3 scripts/bench-campaign.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-small}
TRIALS=${TRIALS:-3}
BENCH=${STAGEBENCH_BENCH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/stagebench/bench}
mkdir -p "$BENCH"
cargo build --release --workspace --quiet
C=$PWD/target/release/coordinator
campaign=$(mktemp -d "$BENCH/campaign-$SCALE.XXXXXX")
file="$campaign/campaign.toml"
sed -e "s/^trials = .*/trials = $TRIALS/" -e "s/^name = \"cold-resume\"/name = \"cold-resume-$SCALE\"/" \
  scripts/campaigns/cold-resume.toml > "$file"
if [[ "$SCALE" != small ]]; then
  raw="$BENCH/raw-$SCALE"
  frozen="$BENCH/frozen-$SCALE"
  if [[ ! -f "$frozen/frozen.json" ]]; then
    [[ -d "$raw" ]] || "$C" dataset generate --scale "$SCALE" --out "$raw"
    "$C" dataset freeze --series "$raw/train_series.parquet" --events "$raw/train_events.csv" --out "$frozen"
  fi
  sed -i -e "s|^# data = .*|data = \"$frozen\"|" "$file"
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$C" campaign "$file" --output "$campaign/out"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$C" verify "$campaign/out"
