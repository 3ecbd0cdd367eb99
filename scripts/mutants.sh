#!/usr/bin/env bash
# Mutation testing of the code that judges (issue 30; docs/testing.md).
#
#   scripts/mutants.sh [GROUP...]     default: every group, one after another
#   scripts/mutants.sh --list         the groups, their files and mutant counts
#
# cargo-mutants plants one change at a time in a group's files (an operator
# flipped, a function body replaced by a default, a match arm deleted) and
# runs the tests that can judge those files; a mutant that no test fails is
# "missed". Each group runs its own tests only, so that one group finishes
# inside an hour on a 2-core machine. Results: target/mutants/GROUP/mutants.out
# (caught.txt, missed.txt, unviable.txt, timeout.txt), and one summary line
# per group on stdout; the score is (caught + timed out) / viable, viable
# being every mutant that built. Run by hand, never in CI, on an otherwise idle machine.
#
# Environment: MUTANTS_TIMEOUT (seconds a test run may take; default 600),
# MUTANTS_IN_PLACE=1 (mutate this checkout itself instead of a copy of it: use
# a spare `git worktree`, whose stable path lets every group reuse one
# incremental build), MUTANTS_ARGS (more cargo-mutants arguments, such as
# "--shard 1/2").
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo mutants --version >/dev/null 2>&1; then
  echo "installing cargo-mutants (cargo install --locked cargo-mutants)" >&2
  cargo install --locked cargo-mutants
fi

COORD=stagebench-coordinator
REPORT=stagebench-report
TESTS=stagebench-tests

# group | files (space-separated globs) | test packages | cargo test args
# (';'-separated). A group's cargo test args choose its test targets.
# cold-prep's 482 mutants took about 80 minutes as one group (8 to 20 s each,
# tests/tests/cold_prep/ being most of it), so they are three: the judging
# (186), what the mode shows (189) and the preparation phases (107). The
# tree's 260 were stopped at 86 minutes after 191 (27 s each, a broken
# sampler often running into the timeout), so they are three as well.
groups() {
  cat <<EOF
stats|report/src/stats/*.rs|$REPORT|--lib
compare|report/src/compare/*.rs|$REPORT $TESTS|--lib;--test=compare
history|report/src/history/*.rs report/src/stats/changes.rs|$REPORT $TESTS|--lib;--test=compare
bisect|report/src/bisect/*.rs coordinator/src/bisect/*.rs|$COORD $REPORT $TESTS|--lib;--test=bisect
spans|report/src/campaign/spans/*.rs|$REPORT $TESTS|--lib;--test=campaign;--test=pipelines
runner|coordinator/src/campaign/runner/*.rs|$TESTS|--test=campaign;--test=pipelines
cold-prep|coordinator/src/modes/cold_prep/assemble.rs coordinator/src/modes/cold_prep/rounds.rs coordinator/src/modes/cold_prep/phases.rs report/src/modes/cold_prep/sweep.rs report/src/modes/cold_prep/warnings.rs|$COORD $REPORT $TESTS|--lib;--test=cold_prep
cold-prep-output|report/src/modes/cold_prep/render.rs report/src/modes/cold_prep/storage.rs report/src/modes/cold_prep/items.rs report/src/modes/cold_prep/plots/mod.rs coordinator/src/modes/cold_prep/storage.rs coordinator/src/modes/cold_prep/items.rs|$COORD $REPORT $TESTS|--lib;--test=cold_prep
preparation|coordinator/src/modes/preparation/*.rs|$COORD $TESTS|--lib;--test=cold_prep
verify|report/src/verify/*.rs report/src/rundir/tree.rs|$REPORT $TESTS|--lib;--test=verify;--test=render;--test=one_ending;--test=campaign
dirlock|host/src/dirlock.rs|stagebench-host $TESTS|--lib;--test=state
tree|worker/src/tree/mod.rs worker/src/tree/watcher.rs|stagebench-worker $TESTS|--lib;--test=trees
tree-cgroup|worker/src/tree/cgroup.rs worker/src/tree/io.rs|stagebench-worker $TESTS|--lib;--test=trees
tree-procfs|worker/src/tree/procfs.rs|stagebench-worker $TESTS|--lib;--test=trees
EOF
}

# The arguments that select a group's files.
file_args() {
  local files=$1 out=() f
  for f in $files; do out+=(-f "$f"); done
  printf '%s\n' "${out[@]}"
}

if [ "${1:-}" = "--list" ]; then
  groups | while IFS='|' read -r name files _ _; do
    mapfile -t fa < <(file_args "$files")
    printf '%-10s %5d mutants  %s\n' "$name" "$(cargo mutants --list "${fa[@]}" | wc -l)" "$files"
  done
  exit 0
fi

wanted=("$@")
known=$(groups | cut -d'|' -f1 | tr '\n' ' ')
for w in "${wanted[@]}"; do
  case " $known " in *" $w "*) ;; *) echo "unknown group '$w' (groups: $known)" >&2; exit 2 ;; esac
done

groups | while IFS='|' read -r name files packages test_args; do
  if [ ${#wanted[@]} -gt 0 ] && [[ ! " ${wanted[*]} " == *" $name "* ]]; then
    continue
  fi
  mapfile -t fa < <(file_args "$files")
  args=()
  # cargo-mutants 27 tests the mutated package only, whatever
  # --test-package says; cargo itself takes the others.
  for p in $packages; do args+=(--cargo-test-arg "--package=$p"); done
  IFS=';' read -ra targs <<<"$test_args"
  for t in "${targs[@]}"; do args+=(--cargo-test-arg "$t"); done
  # verify's byte sweeps re-render the plots for each changed byte of a
  # derived file; every 17th byte is enough to judge a mutant of the code.
  if [ "$name" = verify ]; then export STAGEBENCH_TEST_BYTE_STRIDE=17; else unset STAGEBENCH_TEST_BYTE_STRIDE; fi
  out=target/mutants/$name
  mkdir -p "$out"
  if [ "${MUTANTS_IN_PLACE:-}" = 1 ]; then args+=(--in-place); else args+=(--copy-target true); fi
  started=$(date +%s)
  before=$(ps -eo pid= | tr -d ' ' | sort)
  echo "== $name: ${files} (tests: ${packages}; ${test_args})" >&2
  status=0
  # shellcheck disable=SC2086
  cargo mutants --no-shuffle --timeout "${MUTANTS_TIMEOUT:-600}" \
    --output "$out" "${fa[@]}" "${args[@]}" ${MUTANTS_ARGS:-} >"$out/console.log" 2>&1 || status=$?
  # 0: all caught; 2: some missed; 3: some timed out. Anything else (a usage
  # error, a baseline whose tests fail) means nothing was measured.
  case $status in
    0 | 2 | 3) ;;
    *) echo "$name: cargo mutants exited $status (see $out/console.log)" >&2; exit 1 ;;
  esac
  m=$out/mutants.out
  count() { [ -f "$m/$1" ] && wc -l <"$m/$1" || echo 0; }
  caught=$(count caught.txt) missed=$(count missed.txt)
  unviable=$(count unviable.txt) timeout=$(count timeout.txt)
  # A mutant that makes the tests time out is one they do not let pass.
  viable=$((caught + missed + timeout))
  score=$(python3 -c "print(f'{100*($caught+$timeout)/$viable:.1f}%' if $viable else '-')")
  printf '%-10s caught %4d  missed %4d  unviable %4d  timeout %4d  score %s  (%d s)\n' \
    "$name" "$caught" "$missed" "$unviable" "$timeout" "$score" $(($(date +%s) - started))
  # A mutant that breaks containment can leave a test's daemons running
  # (orphans, adopted by init), and a later baseline that looks for its own
  # may find them. Name them; they are not this script's to kill.
  comm -13 <(echo "$before") <(ps -eo pid= | tr -d ' ' | sort) | while read -r pid; do
    if [ "$(ps -o ppid=,stat= -p "$pid" 2>/dev/null | awk '$2 !~ /^Z/ {print $1}')" = 1 ]; then
      echo "$name: left running, started during the group: $(ps -o pid=,args= -p "$pid")" >&2
    fi
  done
done
