#!/usr/bin/env bash
# Hardening against hostile local processes (issue 28), in one run: a serving node with two
# honest jobs (Python clients that hold each batch STEP_MS, as a training step, and audit the
# ids they get), once alone and once while a hostile process (bench/hostile_client.py) floods
# the node for the whole run: descriptors, reports, attaches of taken ranks, connections that
# never send, forged resume states, garbage. Reports
#  - every honest sample exactly once per epoch in both runs,
#  - the node's open descriptors and resident memory, sampled every 0.2 s: their maxima,
#  - the honest jobs' wall time under attack / alone (target <= 1.2).
# The node signs states (serve.state_key_file), so the forged ones are refused by signature.
# BUSY=1 adds two competing CPU-bound processes at normal priority.
# Usage: bench/hardening.sh [IMAGES] [EPOCHS] [STEP_MS]  (defaults 400 4 600)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

images=${1:-400}
epochs=${2:-4}
step_ms=${3:-600}
build_tools conveyor-pack conveyor_python
data="$DATA_DIR/serve-$images"
ensure_shards "$data" "$images" 0
work=$(mktemp -d /tmp/conveyor-hardening.XXXXXX)
trap 'stop_competitors; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
[[ "${BUSY:-0}" == 1 ]] && start_competitors 2
export PYTHONPATH="$BUILD_DIR/python"

# sample PID OUT: "descriptors rss_mib" of PID every 0.2 s into OUT while it runs.
sample() {
  local pid=$1 out=$2
  while kill -0 "$pid" 2>/dev/null; do
    local fds rss
    fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) || break
    rss=$(awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status" 2>/dev/null) || break
    [[ -n "$rss" ]] && echo "$fds $rss" >>"$out"
    sleep 0.2
  done
}

# serve NAME FLOOD_S: the node, two honest jobs and (FLOOD_S > 0) the hostile process; prints
# the honest jobs' wall seconds (the slower job's).
serve() {
  local name=$1 flood=$2 sock="$work/$1.sock" hostile=""
  "$NODE_BIN" --topology "$BENCH_ROOT/config/default.toml" --set "dataset.path=$data" \
    --set dataset.format=shards --set pipeline.batch_size=32 --set "trainer.epochs=$epochs" \
    --set monitor.interval_ms=10000 --set "serve.socket=$sock" --set serve.jobs=2 \
    --set "serve.state_key_file=$work/state.key" >"$work/$name.node" 2>"$work/$name.node.err" &
  local node=$!
  sample "$node" "$work/$name.samples" &
  local start
  start=$(date +%s.%N)
  local clients=()
  for job in 0 1; do
    STEP_MS=$step_ms IDS_FILE="$work/$name.ids$job" "$PYTHON" "$BENCH_ROOT/bench/serve_iterate.py" \
      "$sock" 0 "$job" >"$work/$name.client$job" &
    clients+=($!)
  done
  if ((flood > 0)); then
    # Once both honest jobs hold their ranks: a process of the socket's user that attaches as a
    # rank first *is* that rank to the node (README, "Security").
    until (($(grep -c "attached (pid" "$work/$name.node.err" || true) >= 2)); do sleep 0.1; done
    "$PYTHON" "$BENCH_ROOT/bench/hostile_client.py" "$sock" "$flood" >"$work/$name.hostile" &
    hostile=$!
  fi
  wait "${clients[@]}"
  local end
  end=$(date +%s.%N)
  wait "$node" || log "$name: the node exited $?"
  # It floods for its whole time (a closed socket counts as refused), then prints its counts.
  [[ -z "${hostile:-}" ]] || wait "$hostile"
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f\n", b - a }'
}

# exactly_once NAME: "yes" when each job's ids hold every sample once per epoch.
exactly_once() {
  local job
  for job in 0 1; do
    "$PYTHON" - "$work/$1.ids$job" "$images" "$epochs" <<'PY' || { echo no; return; }
import collections, sys
seen = collections.Counter(tuple(map(int, l.split())) for l in open(sys.argv[1]))
want = {(e, i) for e in range(int(sys.argv[3])) for i in range(int(sys.argv[2]))}
sys.exit(0 if set(seen) == want and max(seen.values()) == 1 else 1)
PY
  done
  echo yes
}

max_of() { awk -v c="$2" 'BEGIN { m = 0 } { if ($c > m) m = $c } END { print m }' "$1"; }

log "clean run: two honest jobs, $images images x $epochs epochs, ${step_ms} ms steps"
clean=$(serve clean 0)
flood=$(awk -v c="$clean" 'BEGIN { printf "%d\n", (c > 30 ? c : 30) }')
log "attacked run: the same, with a hostile process for $flood s"
attacked=$(serve attacked "$flood")

cat <<REPORT
## Hardening: two honest jobs with and without a hostile local process
$(machine_description)
- $images images, $epochs epochs, batch 32, honest steps ${step_ms} ms; busy=${BUSY:-0}
- hostile process (bench/hostile_client.py, ${flood} s): $(cat "$work/attacked.hostile")
- node: $(json_field "$(cat "$work/attacked.node")" refused_clients) connections refused or dropped, $(json_field "$(cat "$work/attacked.node")" slow_clients) dropped for not reading

| figure | alone | under attack |
|---|---|---|
| honest jobs' wall time (s) | $clean | $attacked |
| every honest sample exactly once | $(exactly_once clean) | $(exactly_once attacked) |
| node: most open descriptors | $(max_of "$work/clean.samples" 1) | $(max_of "$work/attacked.samples" 1) |
| node: most resident memory (MiB) | $(max_of "$work/clean.samples" 2) | $(max_of "$work/attacked.samples" 2) |
| node: complete | $(json_field "$(cat "$work/clean.node")" complete) | $(json_field "$(cat "$work/attacked.node")" complete) |

Under attack / alone, wall time: $(ratio "$attacked" "$clean") (target <= 1.2)
REPORT
