#!/usr/bin/env bash
# The action's first step: stagebench's coordinator (and its worker
# beside it) on PATH. INPUT_INSTALL: wheel, cargo or none; with wheel,
# INPUT_WHEEL names a built wheel (else this action's source is built into
# one by pip, which runs cargo).
set -euo pipefail
case "${INPUT_INSTALL:-cargo}" in
  wheel)
    python3 -m pip install --quiet --disable-pip-version-check "${INPUT_WHEEL:-$GITHUB_ACTION_PATH}"
    # The wheel's coordinator and worker are in that Python's scripts folder.
    scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
    echo "$scripts" >> "${GITHUB_PATH:-/dev/null}"
    export PATH="$scripts:$PATH"
    ;;
  cargo)
    root="$HOME/.stagebench"
    if [ ! -x "$root/bin/coordinator" ] || [ ! -x "$root/bin/worker" ]; then
      cargo install --quiet --locked --root "$root" --path "$GITHUB_ACTION_PATH/coordinator"
      cargo install --quiet --locked --root "$root" --path "$GITHUB_ACTION_PATH/worker"
    fi
    echo "$root/bin" >> "$GITHUB_PATH"
    export PATH="$root/bin:$PATH"
    ;;
  none) ;;
  *)
    echo "error: install '${INPUT_INSTALL}': wheel, cargo or none" >&2
    exit 2
    ;;
esac
command -v coordinator >/dev/null || { echo "error: no coordinator on PATH after install '${INPUT_INSTALL:-cargo}'" >&2; exit 2; }
coordinator --version
