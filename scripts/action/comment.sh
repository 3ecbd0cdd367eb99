#!/usr/bin/env bash
# The action's comment step: the gate's comment.md on the pull request,
# one comment per gate name, found by the marker on its first line and
# updated, never posted twice. Off with INPUT_COMMENT=false, outside a
# pull request, or when the gate wrote no comment.
set -euo pipefail
if [ "${INPUT_COMMENT:-true}" != "true" ]; then
  echo "comment: off"
  exit 0
fi
file="${GATE_DIR:-}/comment.md"
if [ ! -f "$file" ]; then
  echo "comment: none (the gate wrote no comment.md; see its error above)"
  exit 0
fi
if [ -z "${PR_NUMBER:-}" ]; then
  echo "comment: not a pull request; comment.md is in the uploaded directory"
  exit 0
fi
# A fork's read-only token cannot comment: a warning, not a failed job
# (examples/github/gate-fork.yml posts it from the base repository).
cannot() {
  echo "warning: cannot comment ($1): comment.md is in the uploaded directory" >&2
  exit 0
}
marker=$(head -n 1 "$file")
id=$(gh api "repos/$GITHUB_REPOSITORY/issues/$PR_NUMBER/comments" --paginate \
  --jq ".[] | select(.body | startswith(\"$marker\")) | .id" | head -n 1) || cannot "reading comments failed"
if [ -n "$id" ]; then
  gh api -X PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$id" -F "body=@$file" > /dev/null || cannot "updating failed"
  echo "comment: updated $id"
else
  gh api -X POST "repos/$GITHUB_REPOSITORY/issues/$PR_NUMBER/comments" -F "body=@$file" > /dev/null || cannot "posting failed"
  echo "comment: created"
fi
