#!/usr/bin/env bash
# conveyor-analyze against conveyor-node (issue 17): on a generated heavy-tailed set, the
# analyzer's predicted epoch time against a measured node run of the same topology, for
#   (a) a trainer that asks half the preparation rate      (expected verdict: trainer-bound)
#   (b) a trainer that asks 1.5x the preparation rate      (expected verdict: prep-bound)
#   (c) the what-if "1 preprocessor" at (b)'s demand, against a run with
#       pipeline.preprocessors = 1
# and the node's live diagnosis (its dominant class) against the analyzer's verdict. The
# preparation rate P is the analyzer's own, at the topology's preprocessors.
#
#   bench/analyze.sh [IMAGES=1000] [EPOCHS=3]
#
# BUSY=1 adds two competing CPU-bound processes at normal priority for the whole run (the
# analyzer measures under them too). Writes bench/results/analyze.md (BUSY=1: analyze_busy.md).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMAGES=${1:-1000}
EPOCHS=${2:-3}
DATASET="$DATA_DIR/heavy-$IMAGES"
ANALYZE_BIN="$BUILD_DIR/apps/conveyor-analyze/conveyor-analyze"
suffix=""
[[ "${BUSY:-0}" == 1 ]] && suffix="_busy"
RESULT="$BENCH_ROOT/bench/results/analyze$suffix.md"
BATCH=64

build_tools conveyor-analyze
ensure_dataset "$DATASET" "$IMAGES" 0.1

busy_if_asked

common=(--set "dataset.path=\"$DATASET\"" --set 'dataset.format="folder"'
  --set "pipeline.batch_size=$BATCH" --set "trainer.epochs=$EPOCHS")

# analyze STEP_MS: the analyzer's JSON document for a trainer of STEP_MS a batch.
analyze() {
  "$ANALYZE_BIN" --topology "$BENCH_ROOT/config/default.toml" "${common[@]}" \
    --set "trainer.step_ms=$1" --samples 400 --json
}

# node STEP_MS NAME [KEY=VALUE...]: the node's JSON line.
node() {
  local step=$1 name=$2
  shift 2
  local sets=("${common[@]}" --set "trainer.step_ms=$step" --set monitor.interval_ms=200)
  local kv
  for kv in "$@"; do
    sets+=(--set "$kv")
  done
  "$NODE_BIN" --topology "$BENCH_ROOT/config/default.toml" "${sets[@]}" \
    --log-level info 2>"$LOG_DIR/analyze-$name.log"
}

field() {  # field JSON PYTHON-EXPRESSION-OVER-d
  "$PYTHON" -c 'import json, sys; d = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

log "analyzing $DATASET"
first=$(analyze 0)
prep=$(field "$first" 'd["prep"]["samples_per_s"]')
# The trainer's step for a demand of FACTOR x P samples/s (one GPU, batches of BATCH).
step_for() { awk -v p="$prep" -v f="$1" -v b="$BATCH" 'BEGIN { printf "%.3f\n", b * 1000 / (f * p) }'; }
step_a=$(step_for 0.5)
step_b=$(step_for 1.5)
log "P = $prep samples/s: steps $step_a ms (a) and $step_b ms (b)"

a_pred=$(analyze "$step_a")
a_node=$(node "$step_a" a)
b_pred=$(analyze "$step_b")
b_node=$(node "$step_b" b)
c_node=$(node "$step_b" c pipeline.preprocessors=1)

row() {  # row NAME PREDICTED-EPOCH-S PREDICTED-CLASS NODE-JSON
  "$PYTHON" - "$@" <<'PY'
import json, sys
name, predicted, verdict, node = sys.argv[1], float(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
ends = node["epoch_end_s"]
later = [b - a for a, b in zip(ends, ends[1:])]
measured = sum(later) / len(later)
print(f"| {name} | {predicted:.2f} | {measured:.2f} | {predicted / measured:.3f} | {verdict} | "
      f"{node['bottleneck']} ({node['bottleneck_shares'].get(node['bottleneck'], 0):.0%} of the time) |")
PY
}

{
  echo "# conveyor-analyze: predicted against measured"
  echo
  machine_description
  echo "- dataset: $IMAGES synthetic JPEGs, 10% of them 1800-3200 px (an image folder)"
  echo "- topology: config/default.toml (latency_aware, decode scaled, random_resized_crop 224,"
  echo "  flip, normalize), batch $BATCH, $EPOCHS epochs, one host feeder"
  echo "- P (the analyzer's preparation rate at the topology's preprocessors): $prep samples/s"
  echo "- measured epoch: the mean of epochs 2..$EPOCHS (the first holds the start); the node's"
  echo "  class: the dominant one of its live diagnosis (monitor.interval_ms 200)"
  echo "- command: BUSY=${BUSY:-0} bench/analyze.sh $IMAGES $EPOCHS"
  echo
  echo "| case | predicted epoch s | measured epoch s | predicted / measured | analyzer's verdict | node's live diagnosis |"
  echo "|---|---|---|---|---|---|"
  row "(a) demand 0.5 P (step $step_a ms)" "$(field "$a_pred" 'd["verdict"]["later_epochs"]["epoch_s"]')" \
    "$(field "$a_pred" 'd["verdict"]["later_epochs"]["bottleneck"]')" "$a_node"
  row "(b) demand 1.5 P (step $step_b ms)" "$(field "$b_pred" 'd["verdict"]["later_epochs"]["epoch_s"]')" \
    "$(field "$b_pred" 'd["verdict"]["later_epochs"]["bottleneck"]')" "$b_node"
  row "(c) what-if 1 preprocessor at (b)" \
    "$(field "$b_pred" 'd["what_if"]["preprocessors"][0]["epoch_s"]')" \
    "$(field "$b_pred" 'd["what_if"]["preprocessors"][0]["bottleneck"]')" "$c_node"
} >"$RESULT"
cat "$RESULT"
