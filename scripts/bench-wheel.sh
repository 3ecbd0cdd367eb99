#!/usr/bin/env bash
# scripts/bench-wheel.sh [RUNS]: what the wheel saves a new user, measured
# side by side on one machine. A benchmark, run by hand on an otherwise
# idle machine, never beside another; it takes about 15 minutes on 2 cores.
#
# From a clean clone of HEAD (in a scratch directory, removed at the end):
# 1. `cargo build --release --workspace`, README's first command, timed
#    (the clone's own target/, so nothing is reused);
# 2. `pip wheel . -w dist` after it (cargo finds its work done: the wheel's
#    own step), and the wheel's size;
# 3. `pip install --no-index WHEEL` into RUNS fresh virtual environments
#    (default 5), each timed: the median against step 1, as a ratio;
# 4. the main job, `coordinator --workers 8 --mode cold-prep`, RUNS times
#    from the wheel's bin/ and RUNS times from target/release, alternating
#    (wheel first, then release first), each into a new directory: the
#    medians of their speedups, and whether every run's caches were
#    identical. The control is the alternation itself: the two binaries
#    are the same sources built by the same cargo (the wheel's has its
#    debug line tables stripped), so their speedups must agree within the
#    runs' own spread.
set -euo pipefail
runs=${1:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
clone="$scratch/clone"
git clone -q "$repo" "$clone"
cd "$clone"
export CARGO_TARGET_DIR="$clone/target" STAGEBENCH_CACHE="$scratch/cache"

seconds() { python3 -c 'import sys,time; print(f"{time.time():.3f}")'; }
median() { python3 -c 'import sys,statistics; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"; }

t0=$(seconds)
cargo build --quiet --release --workspace
t1=$(seconds)
cargo_s=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
echo "cargo build --release --workspace (clean clone): $cargo_s s"

python3 -m venv "$scratch/builder"
"$scratch/builder/bin/pip" install --quiet --disable-pip-version-check setuptools
t0=$(seconds)
"$scratch/builder/bin/pip" wheel --quiet --disable-pip-version-check . -w "$scratch/dist"
t1=$(seconds)
wheel=$(ls "$scratch"/dist/stagebench-*.whl)
echo "pip wheel . after it: $(python3 -c "print(f'{$t1 - $t0:.1f}')") s; $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB"

installs=()
for i in $(seq "$runs"); do
  python3 -m venv "$scratch/venv$i"
  t0=$(seconds)
  "$scratch/venv$i/bin/pip" install --quiet --disable-pip-version-check --no-index "$wheel"
  t1=$(seconds)
  installs+=("$(python3 -c "print($t1 - $t0)")")
done
install_s=$(median "${installs[@]}")
echo "pip install WHEEL into a fresh environment: median $install_s s of $runs (${installs[*]}); cargo build / pip install = $(python3 -c "print(f'{$cargo_s / $install_s:.0f}')")x"

# The built-in data made once, before either is timed.
"$scratch/venv1/bin/coordinator" --workers 2 --mode cold-prep --quiet --output "$scratch/warm" > /dev/null
mkdir "$scratch/runs"
for i in $(seq "$runs"); do
  order="wheel release"
  if [ $((i % 2)) = 0 ]; then order="release wheel"; fi
  for which in $order; do
    case "$which" in
      wheel) bin="$scratch/venv1/bin/coordinator" ;;
      release) bin="$clone/target/release/coordinator" ;;
    esac
    "$bin" --workers 8 --mode cold-prep --quiet --output "$scratch/runs/$which-$i" > /dev/null 2>&1
  done
done
python3 - "$scratch/runs" "$runs" <<'EOF'
import json, os, statistics, sys
root, runs = sys.argv[1], int(sys.argv[2])
for which in ("wheel", "release"):
    speedups, identical = [], []
    for i in range(1, runs + 1):
        r = json.load(open(os.path.join(root, f"{which}-{i}", "report.json")))
        speedups.append(r["speedup"])
        identical.append(r["caches_identical"])
    print(f"main job from {which:7}: speedup median {statistics.median(speedups):.2f}x "
          f"(range {min(speedups):.2f}-{max(speedups):.2f} over {runs} runs); caches identical in {sum(identical)} of {runs}")
EOF
