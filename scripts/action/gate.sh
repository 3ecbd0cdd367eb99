#!/usr/bin/env bash
# The action's gate step: `coordinator gate` with the action's inputs. It
# never fails the step itself: its exit code goes to GITHUB_OUTPUT
# (`exit-code`) with the gate's directory (`dir`), so the upload and the
# comment run whatever the gate said; the last step ends the job with it.
set -uo pipefail
out="${RUNNER_TEMP:-/tmp}/stagebench-gate-${INPUT_NAME:-default}"
echo "dir=$out" >> "$GITHUB_OUTPUT"
if [ -z "${INPUT_BASE:-}" ] || [ -z "${INPUT_HEAD:-}" ]; then
  echo "error: base and head are empty: outside a pull request, give the action's base and head inputs" >&2
  echo "exit-code=2" >> "$GITHUB_OUTPUT"
  exit 0
fi
args=(gate --base "$INPUT_BASE" --head "$INPUT_HEAD" --output "$out"
      --name "${INPUT_NAME:-default}" --threshold "${INPUT_THRESHOLD:-5}"
      --not-sure "${INPUT_NOT_SURE:-fail}")
[ -n "${INPUT_BUILD:-}" ] && args+=(--build "$INPUT_BUILD")
[ -n "${INPUT_MAX_ROUNDS:-}" ] && args+=(--max-rounds "$INPUT_MAX_ROUNDS")
for figure in ${INPUT_GATE:-wall_s}; do args+=(--gate "$figure"); done
# The run flags as the workflow wrote them, quotes and all (the workflow's
# own text, never the pull request's).
eval "run_flags=(${INPUT_RUN_FLAGS:-})"
coordinator "${args[@]}" -- "${run_flags[@]}"
code=$?
echo "exit-code=$code" >> "$GITHUB_OUTPUT"
exit 0
