#!/usr/bin/env bash
# scripts/check-input-bound.sh PYTHON [RUNS]: the input-bound estimate both
# ways on TensorFlow, RUNS times each (default 5), alternating: the Keras
# example's control (a loader that only copies, --loader-work 0, a wide
# model) must be graded "not input-bound" or "not distinguishable from no
# waiting" every time, and the slow loader (--loader-work 12) "highly
# input-bound" every time. PYTHON has tensorflow-cpu (Keras 3 with it);
# KERAS_BACKEND=tensorflow, where Python sees no loader wait and the
# verdict is the estimate from --keras-resident. Per run: the grade and the
# sentence's figures. Run by hand (minutes), never beside a benchmark.
set -euo pipefail
py=${1:?usage: scripts/check-input-bound.sh PYTHON [RUNS]}
runs=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
coordinator=${COORDINATOR:-$root/target/release/coordinator}
if [ ! -x "$coordinator" ]; then
  (cd "$root" && cargo build --release --quiet -p stagebench-coordinator -p stagebench-worker)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KERAS_BACKEND=tensorflow
declare -A ok=([control]=0 [slow]=0)
for r in $(seq 1 "$runs"); do
  for which in control slow; do
    case $which in
      control) args="--windows 1024 --epochs 2 --loader-work 0 --width 256" ;;
      slow) args="--windows 1024 --epochs 2 --loader-work 12" ;;
    esac
    out=$work/$which-$r
    "$coordinator" --quiet --name train --output "$out" \
      --command "'$py' '$root/examples/keras/train.py' $args" \
      --span preset:keras --keras-resident 20 > /dev/null 2> "$out.err" || {
      echo "$which $r: the run failed"; tail -5 "$out.err"; continue; }
    line=$(grep -m1 '^Input: ' "$out/summary.md" || echo "Input: (none)")
    grade=$(echo "$line" | grep -o 'so it is [a-z -]*' | head -1)
    good=no
    case "$which:$grade" in
      "control:so it is not input-bound"*|"control:so it is not distinguishable from no waiting"*) good=yes ;;
      "slow:so it is highly input-bound"*) good=yes ;;
    esac
    [ "$good" = yes ] && ok[$which]=$((ok[$which] + 1))
    echo "$which $r: $good: ${line#Input: }"
  done
done
echo "control graded not input-bound or not distinguishable: ${ok[control]} of $runs"
echo "slow loader graded highly input-bound: ${ok[slow]} of $runs"
