#!/usr/bin/env bash
# scripts/bench-bisect.sh [REPEATS]: `coordinator bisect` against `git bisect
# run` with one timing per commit, on the same repository, REPEATS times
# (default 5), side by side in one run.
#
# The repository is tests/tests/bisect.rs's: 17 commits of `work.sh` (a
# sleep of 100 ms plus up to 10 ms of jitter), commit 11 adding 40 ms. The
# git oracle is what a user writes without stagebench: time the good commit
# once, then call a commit bad when its one timing is more than 5% above
# that (the same 5% as bisect's default --threshold). Per repeat: the commit
# each named (and whether it is commit 11), probes, and the wall time; then
# how often each was right and the medians of their wall times with ratio.
# Run by hand (it takes a few minutes), never beside another benchmark.
set -euo pipefail
repeats=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
coordinator=$root/target/release/coordinator
if [ ! -x "$coordinator" ] || [ ! -x "$root/target/release/worker" ]; then
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
  printf '# commit %s\nsleep $(awk -v s=$$ '"'"'BEGIN { srand(s); printf "%%.4f", 0.1 + %s + rand() * 0.01 }'"'"')\n' \
    "$i" "$extra" > "$repo/work.sh"
  git -C "$repo" add -A
  git -C "$repo" commit -q -m "commit $i"
done
truth=$(git -C "$repo" rev-parse HEAD~6)
good=$(git -C "$repo" rev-parse HEAD~16)
bad=$(git -C "$repo" rev-parse HEAD)
# One timing of `sh work.sh` in the current directory, in seconds.
once() {
  python3 -c 'import subprocess, time; t = time.perf_counter(); subprocess.run(["sh", "work.sh"], check=True); print(f"{time.perf_counter() - t:.4f}")'
}
now() { python3 -c 'import time; print(f"{time.time():.3f}")'; }

printf '%-6s %-10s %-14s %-6s %8s   %-14s %-6s %8s\n' repeat "" "bisect names" right "wall s" "git names" right "wall s"
sb_walls=() git_walls=() sb_right=0 git_right=0
for r in $(seq 1 "$repeats"); do
  out=$work/bisect-$r
  t0=$(now)
  "$coordinator" bisect --repo "$repo" --good "$good" --bad "$bad" --output "$out" -- \
    --mode trials --trials 6 --warmup 1 --command 'sh work.sh' --name work > "$work/sb.txt" 2> "$work/sb.err"
  t1=$(now)
  sb_named=$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["first_bad"] or "none")' "$out/report.json")
  sb_probes=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["probes"]))' "$out/report.json")
  # git bisect run in a clone of its own (it checks commits out in its work tree).
  clone=$work/clone-$r
  git clone -q "$repo" "$clone"
  t2=$(now)
  limit=$(cd "$clone" && git checkout -q "$good" && once | python3 -c 'import sys; print(float(sys.stdin.read()) * 1.05)')
  cat > "$work/oracle.sh" <<EOF
#!/bin/sh
t=\$(python3 -c 'import subprocess, time; t = time.perf_counter(); subprocess.run(["sh", "work.sh"], check=True); print(time.perf_counter() - t)')
python3 -c "import sys; sys.exit(1 if \$t > $limit else 0)"
EOF
  chmod +x "$work/oracle.sh"
  (cd "$clone" && git bisect start "$bad" "$good" > /dev/null && git bisect run "$work/oracle.sh" > "$work/git.txt" 2>&1 || true)
  t3=$(now)
  git_named=$(grep -m1 -o '^[0-9a-f]\{40\} is the first bad commit' "$work/git.txt" | cut -c1-40 || echo none)
  git_probes=$(grep -c '^running ' "$work/git.txt" || true)
  sb_wall=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
  git_wall=$(python3 -c "print(f'{$t3 - $t2:.1f}')")
  sb_walls+=("$sb_wall") git_walls+=("$git_wall")
  sb_ok=no git_ok=no
  [ "$sb_named" = "$truth" ] && sb_ok=yes && sb_right=$((sb_right + 1))
  [ "$git_named" = "$truth" ] && git_ok=yes && git_right=$((git_right + 1))
  printf '%-6s %-10s %-14s %-6s %8s   %-14s %-6s %8s\n' "$r" "" \
    "${sb_named:0:12}" "$sb_ok" "$sb_wall" "${git_named:0:12}" "$git_ok" "$git_wall"
  printf '       probes: bisect %s (each 7 fresh-process runs), git bisect run %s (one timing each)\n' "$sb_probes" "$git_probes"
done
echo "the first bad commit is ${truth:0:12} (commit 11)"
python3 - "$sb_right" "$git_right" "$repeats" "${sb_walls[*]}" "${git_walls[*]}" <<'EOF'
import statistics, sys
sb_right, git_right, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
sb = [float(x) for x in sys.argv[4].split()]
gb = [float(x) for x in sys.argv[5].split()]
print(f"coordinator bisect right {sb_right}/{n}, median wall {statistics.median(sb):.1f} s")
print(f"git bisect run (one timing) right {git_right}/{n}, median wall {statistics.median(gb):.1f} s")
print(f"wall ratio bisect / git bisect run: {statistics.median(sb) / statistics.median(gb):.2f}")
EOF
