#!/usr/bin/env bash
# Cold feature-cache preparation at a given scale (default: seed, the real
# data's size, ~128 M rows), next to its floor: reading and decoding the same
# parquet files in one process with no checks, extraction or writes.
#
# Per round, interleaved so machine drift hits all of them alike:
#   floor     coordinator dataset scan          (read + decode, one process)
#   w=N       coordinator --mode cold-prep --workers N  (serial and N-process
#             preparation in one run, each into its own new cache)
# Medians over every round of every run are printed (a cold-prep run has 3
# rounds by default). "Cold" means an empty feature cache; the
# OS page cache is not flushed (the floor runs under the same conditions).
# Run by hand on an otherwise idle machine; not part of CI.
#
#   SCALE=seed WORKERS="2 8" ROUNDS=3 scripts/bench-cold-prep.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-seed}
WORKERS=${WORKERS:-"2 8"}
ROUNDS=${ROUNDS:-3}
BENCH=${STAGEBENCH_BENCH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/stagebench/bench}
mkdir -p "$BENCH"
cargo build --release --workspace --quiet
C=target/release/coordinator
raw="$BENCH/raw-$SCALE"
frozen="$BENCH/frozen-$SCALE"
if [[ ! -f "$frozen/frozen.json" ]]; then
  [[ -d "$raw" ]] || { echo "generating the $SCALE cohort in $raw"; /usr/bin/time -f "  %e s, max RSS %M KiB" "$C" dataset generate --scale "$SCALE" --out "$raw"; }
  echo "freezing into $frozen"
  /usr/bin/time -f "  %e s, max RSS %M KiB" "$C" dataset freeze --series "$raw/train_series.parquet" --events "$raw/train_events.csv" --out "$frozen"
fi
runs=$(mktemp -d "$BENCH/runs.XXXXXX")
trap 'rm -rf "$runs"' EXIT
for round in $(seq 1 "$ROUNDS"); do
  "$C" dataset scan --data "$frozen" | tee "$runs/scan-$round.txt"
  for w in $WORKERS; do
    "$C" --quiet --mode cold-prep --workers "$w" --data "$frozen" --output "$runs/r$round-w$w" | tail -n 2 | head -n 1
  done
done
python3 - "$runs" "$ROUNDS" $WORKERS <<'PY'
import json, os, re, statistics as st, sys
runs, rounds, workers = sys.argv[1], int(sys.argv[2]), [int(w) for w in sys.argv[3:]]
floor = [float(re.search(r"= ([0-9.]+) s", open(f"{runs}/scan-{r}.txt").read()).group(1)) for r in range(1, rounds + 1)]
load = open("/proc/loadavg").read().split()[:3]
print(f"\n{rounds} rounds; load average {' '.join(load)}; {os.cpu_count()} CPUs")
m = st.median
print(f"floor: read + decode, one process           median {m(floor):8.3f} s")
serial_all = []
for w in workers:
    reps = [json.load(open(f"{runs}/r{r}-w{w}/report.json")) for r in range(1, rounds + 1)]
    # Every round of every run (a run's `serial`/`parallel` are its round 1).
    each = [r for x in reps for r in x.get("rounds", [])] or [
        {"serial_wall_s": x["serial"]["wall_s"], "parallel_wall_s": x["parallel"]["wall_s"]} for x in reps
    ]
    serial = [r["serial_wall_s"] for r in each]
    par = [r["parallel_wall_s"] for r in each]
    serial_all += serial
    c = reps[0]["counts"]
    rss = max(wk["peak_rss_bytes"] for x in reps for wk in x["parallel"]["workers"]) / 2**20
    srss = max(x["serial"]["peak_rss_bytes"] for x in reps) / 2**20
    comp = reps[0]["serial"]["components_s"]
    pcomp = reps[0]["parallel"]["components_s"]
    print(f"--workers {w}: {c['train_series']} train series, {c['samples']} samples, {c['frames']} frames ({c['valid_frames']} valid)")
    print(f"  serial preparation                        median {m(serial):8.3f} s   ({m(serial)/m(floor):.2f}x the floor), peak RSS {srss:.0f} MiB")
    print(f"  {w}-process preparation                     median {m(par):8.3f} s   speedup {m([s/p for s,p in zip(serial,par)]):.2f}x, "
          f"efficiency {100*m([x['parallel_efficiency'] for x in reps]):.0f}%, load imbalance {m([x['load_imbalance'] for x in reps]):.2f}, "
          f"peak RSS per worker <= {rss:.0f} MiB; caches identical: {all(x['caches_identical'] for x in reps)}")
    print("  serial time by component (round 1):       " + ", ".join(f"{k[:-2]} {v:.2f} s" for k, v in comp.items()))
    print(f"  {w}-process time by component, summed:      " + ", ".join(f"{k[:-2]} {v:.2f} s" for k, v in pcomp.items()))
PY
