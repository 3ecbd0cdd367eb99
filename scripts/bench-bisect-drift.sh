#!/usr/bin/env bash
# scripts/bench-bisect-drift.sh OLD_COORDINATOR [REPEATS]: `coordinator bisect`
# on a drifting program, this build against OLD_COORDINATOR (a build from
# before probes were measured in windows beside the endpoints, issue 63),
# alternating, REPEATS times each (default 5).
#
# The repository: 17 commits of work.py, a Python program that sleeps
# 250 ms, 40 ms more from commit 11 on, plus a drift of 0 to 30 ms that
# follows the wall clock (15 ms × (1 + sin(2π t / 20 s))): what a busy CI
# runner does to a program, slowly, while a bisection runs. The control is
# the truth, commit 11. Per repeat and build: what it answered (a commit, or
# "one of" a set), whether that is right (the set must hold commit 11 and a
# single commit must be it), its probes and its wall time; then the counts.
# Run by hand (it takes many minutes), never beside another benchmark.
set -euo pipefail
old=${1:?usage: scripts/bench-bisect-drift.sh OLD_COORDINATOR [REPEATS]}
repeats=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
new=${NEW_COORDINATOR:-$root/target/release/coordinator}
if [ ! -x "$new" ]; then
  (cd "$root" && cargo build --release --quiet -p stagebench-coordinator -p stagebench-worker)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
repo=$work/repo
mkdir -p "$repo"
git -C "$repo" init -q
git -C "$repo" config user.email bench@example.invalid
git -C "$repo" config user.name bench
for i in $(seq 1 17); do
  extra=0
  [ "$i" -ge 11 ] && extra=0.04
  cat > "$repo/work.py" <<EOF
# commit $i
import math, time
drift = 0.015 * (1 + math.sin(2 * math.pi * time.time() / 20))
time.sleep(0.25 + $extra + drift)
EOF
  git -C "$repo" add -A
  git -C "$repo" commit -q -m "commit $i"
done
truth=$(git -C "$repo" rev-parse HEAD~6)
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }
# One bisection by coordinator $1 into $2; prints "answer right probes wall".
one() {
  local t0 t1
  t0=$(now)
  "$1" bisect --repo "$repo" --good HEAD~16 --bad HEAD --output "$2" -- \
    --mode trials --trials 6 --warmup 1 --command 'python3 work.py' --name work \
    > "$2.out" 2> "$2.err" || true
  t1=$(now)
  python3 - "$2/report.json" "$truth" "$t0" "$t1" <<'EOF'
import json, sys
path, truth, t0, t1 = sys.argv[1:]
try:
    r = json.load(open(path))
except OSError:
    print("failed no 0 %.0f" % (float(t1) - float(t0)))
    sys.exit()
if r.get("first_bad"):
    answer, right = r["first_bad"][:12], r["first_bad"] == truth
elif r.get("candidates"):
    answer = "one-of:" + ",".join(c[:7] for c in r["candidates"])
    right = truth in r["candidates"]
else:
    answer, right = "none", False
print(answer, "yes" if right else "no", len(r["probes"]), "%.0f" % (float(t1) - float(t0)))
EOF
}
printf '%-6s %-8s %-40s %-6s %7s %8s\n' repeat build answer right probes "wall s"
declare -A right=([new]=0 [old]=0) single_wrong=([new]=0 [old]=0)
for r in $(seq 1 "$repeats"); do
  order="new old"
  [ $((r % 2)) -eq 0 ] && order="old new"
  for which in $order; do
    bin=$new
    [ "$which" = old ] && bin=$old
    read -r answer ok probes wall < <(one "$bin" "$work/$which-$r")
    printf '%-6s %-8s %-40s %-6s %7s %8s\n' "$r" "$which" "$answer" "$ok" "$probes" "$wall"
    [ "$ok" = yes ] && right[$which]=$((right[$which] + 1))
    if [ "$ok" = no ] && [ "${answer#one-of:}" = "$answer" ] && [ "$answer" != none ] && [ "$answer" != failed ]; then
      single_wrong[$which]=$((single_wrong[$which] + 1))
    fi
  done
done
echo "the first bad commit is ${truth:0:12} (commit 11)"
for which in new old; do
  echo "$which: right $((right[$which])) of $repeats; a single commit named wrongly $((single_wrong[$which])) of $repeats"
done
