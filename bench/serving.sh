#!/usr/bin/env bash
# Serving trainer processes (issue 13), measured in one run on one machine:
#  1. samples/s of a Python client that only iterates and releases (bench/serve_iterate.py)
#     vs the node's own simulated trainer at step 0, same topology (target >= 0.95x);
#  2. the hand-over latency of a batch, node publish -> client has it, p50/p99 in us, from
#     the C++ client (example-trainer --attach) and the Python client;
#  3. CPU-seconds of 3 jobs served by one node (serve.jobs = 3, prep once) vs 3 nodes with one
#     job each (target <= 0.4x), clients included;
#  4. peak resident memory of the node and of each client.
# BUSY=1 adds two competing CPU-bound processes at normal priority for the whole run.
# Usage: bench/serving.sh [IMAGES] [EPOCHS] [ROUNDS]  (defaults 400 3 3)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

images=${1:-400}
epochs=${2:-3}
rounds=${3:-3}
build_tools conveyor-pack example-trainer conveyor_python
data="$DATA_DIR/serve-$images"
ensure_shards "$data" "$images" 0
work=$(mktemp -d /tmp/conveyor-serve.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export PYTHONPATH="$BUILD_DIR/python"
common=(--set "dataset.path=$data" --set dataset.format=shards --set pipeline.batch_size=32
  --set "trainer.epochs=$epochs" --set monitor.interval_ms=10000)

if [[ "${BUSY:-0}" == 1 ]]; then
  log "busy machine: two competing CPU-bound processes"
  for _ in 1 2; do (while :; do :; done) & done
fi

# timed OUT CMD...: runs CMD with /usr/bin/time; stdout to OUT, "%e %U %S %M" to OUT.time.
timed() {
  local out=$1
  shift
  /usr/bin/time -o "$out.time" -f '%e %U %S %M' "$@" >"$out" 2>"$out.err"
}
cpu_of() { awk '{ print $2 + $3 }' "$1.time"; }
rss_mb_of() { awk '{ printf "%.0f\n", $4 / 1024 }' "$1.time"; }

# serve NAME JOBS CLIENT...: a serving node with JOBS jobs and one client per job (CLIENT is
# the client command; SOCKET, JOB are appended), all timed.
serve() {
  local name=$1 jobs=$2
  shift 2
  local sock="$work/$name.sock" j
  timed "$work/$name.node" "$NODE_BIN" --topology "$BENCH_ROOT/config/default.toml" "${common[@]}" \
    --set "serve.socket=$sock" --set "serve.jobs=$jobs" &
  local pids=($!)
  for ((j = 0; j < jobs; j++)); do
    timed "$work/$name.client$j" "$@" "$sock" 0 "$j" &
    pids+=($!)
  done
  wait "${pids[@]}"  # not the competing processes of BUSY=1
}

declare -a sim_rates py_rates
for ((r = 1; r <= rounds; r++)); do
  log "round $r: simulated trainer"
  timed "$work/sim" "$NODE_BIN" --topology "$BENCH_ROOT/config/default.toml" "${common[@]}"
  sim_rates+=("$(json_field "$(cat "$work/sim")" samples_per_s)")
  log "round $r: Python client"
  serve py 1 "$PYTHON" "$BENCH_ROOT/bench/serve_iterate.py"
  py_rates+=("$(json_field "$(cat "$work/py.client0")" samples_per_s)")
done
sim=$(median "${sim_rates[@]}")
py=$(median "${py_rates[@]}")
py_p50=$(json_field "$(cat "$work/py.client0")" handover_p50_us)
py_p99=$(json_field "$(cat "$work/py.client0")" handover_p99_us)
node_rss=$(rss_mb_of "$work/py.node")
client_rss=$(rss_mb_of "$work/py.client0")

log "hand-over latency of the C++ client"
serve cpp 1 "$BUILD_DIR/apps/example-trainer/example-trainer" --attach
cpp_line=$(grep 'hand-over' "$work/cpp.client0")

log "3 jobs on one node vs 3 nodes"
serve shared 3 "$PYTHON" "$BENCH_ROOT/bench/serve_iterate.py"
shared_cpu=$(awk '{ s += $2 + $3 } END { print s }' "$work"/shared.*.time)
solos=()
for n in 0 1 2; do
  serve "solo$n" 1 "$PYTHON" "$BENCH_ROOT/bench/serve_iterate.py" &
  solos+=($!)
done
wait "${solos[@]}"
solo_cpu=$(awk '{ s += $2 + $3 } END { print s }' "$work"/solo*.time)
shared_steps=$(json_field "$(cat "$work/shared.node")" steps_executed)

cat <<REPORT
## Serving ($images images, $epochs epochs, batch 32, 224x224 float32; busy=${BUSY:-0})
| figure | value |
|---|---|
| simulated trainer, samples/s (median of $rounds) | $sim |
| Python client iterate+release, samples/s (median of $rounds) | $py |
| Python / simulated | $(ratio "$py" "$sim") |
| hand-over p50 / p99, Python client (us) | $py_p50 / $py_p99 |
| hand-over, C++ client | ${cpp_line#*: } |
| CPU-s, 3 jobs on one node (node + 3 clients) | $shared_cpu |
| CPU-s, 3 nodes with one job each (nodes + clients) | $solo_cpu |
| one node / three nodes, CPU | $(ratio "$shared_cpu" "$solo_cpu") |
| steps_executed, one node serving 3 jobs | $shared_steps (= images x epochs x 4 steps: prepared once) |
| peak RSS node / Python client (MiB) | $node_rss / $client_rss |
REPORT
