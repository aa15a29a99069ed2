#!/usr/bin/env bash
# Speech (MLPerf RNN-T on LibriSpeech; issue 32): conveyor-node on the speech recipe
# (config/examples/rnnt-librispeech.toml), served to a Python trainer process
# (bench/speech_client.py, the `conveyor` module), against PyTorch's DataLoader with torchaudio
# doing the same steps (bench/speech_dataloader.py, 2 workers), on one espeak-ng speech set
# (scripts/make-speech-set), batch 32.
#
#   bench/speech.sh [DIR=build-bench/data/speech-2000] [EPOCHS=3] [ROUNDS=3] [DL_EPOCHS=1]
#        BUSY=1: two competing CPU-bound processes for the whole run
#
# DIR is generated when it does not exist (2000 utterances, ~220 MB, aside and renamed) and read
# once first, so that every run finds it in the page cache. Three node configurations: in_order
# (no buckets), latency_aware (no buckets), and latency_aware with the recipe's buckets (16,
# learned; at step 0 also MLPerf's 8). In one invocation:
#   1. at step 0 (the trainer asks for the next batch as soon as it has one), ROUNDS rounds: the
#      DataLoader and the three node configurations, their order turned round from round to
#      round: samples/s, and the padding of every batch (padded frames / real frames);
#   2. the step time of 85% demand, step_ms = 1000 x 32 / (0.85 x R), R the median step-0
#      rate of the node without buckets (both policies pooled: the rate the CPUs prepare);
#      the three configurations at it, ROUNDS rounds: the stall share;
#   3. the DataLoader with MLPerf's BucketingSampler (8 buckets) at step 0, at step_ms, and its
#      per-sample cost in one process.
# Targets: node samples/s >= 4x the DataLoader's (the recipe as it ships: latency_aware with
# buckets; the median of the rounds' ratios); latency_aware's stall at 85% demand <= 0.3x
# in_order's; with buckets, padded frames <= 1.15x real frames at batch 32.
# Writes bench/results/speech.md (speech_busy.md with BUSY=1); every JSON line stays in
# build-bench/bench-logs/speech*.jsonl, the node's logs beside it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DATASET=${1:-$DATA_DIR/speech-2000}
EPOCHS=${2:-3}
ROUNDS=${3:-3}
DL_EPOCHS=${4:-1}
UTTERANCES=2000
BATCH=32
DEMAND=0.85
RECIPE="$BENCH_ROOT/config/examples/rnnt-librispeech.toml"
SUFFIX=$([[ "${BUSY:-0}" == 1 ]] && echo _busy || true)
RESULT="$BENCH_ROOT/bench/results/speech$SUFFIX.md"
RUNS="$LOG_DIR/speech$SUFFIX.jsonl"
CONFIGS=(in_order latency_aware buckets)  # and at step 0 buckets8: MLPerf's 8 buckets

# config_sets CONFIG: the node's --set flags for a configuration.
config_sets() {
  case $1 in
    in_order) echo "--set batching.policy=in_order --set batching.bucket_by=" ;;
    latency_aware) echo "--set batching.policy=latency_aware --set batching.bucket_by=" ;;
    buckets) echo "--set batching.policy=latency_aware" ;;
    buckets8) echo "--set batching.policy=latency_aware --set batching.bucket_count=8" ;;
  esac
}

# node NAME CONFIG STEP_MS: a serving node and a Python trainer that takes EPOCHS epochs;
# prints the trainer's JSON line with the node's own under "node".
node() {
  local name=$1 config=$2 step=$3 socket json node_json pid
  socket=$(mktemp -u "${TMPDIR:-/tmp}/conveyor-speech.XXXXXX.sock")
  # shellcheck disable=SC2046 # config_sets gives words
  (cd "$BENCH_ROOT" && exec "$NODE_BIN" --topology "$RECIPE" --set "dataset.path=$DATASET" \
    --set "serve.socket=$socket" --set serve.jobs=1 --set gpus=1 \
    --set "trainer.epochs=$EPOCHS" --set monitor.interval_ms=1000 \
    $(config_sets "$config") --log-level info \
    >"$LOG_DIR/speech$SUFFIX-$name.json" 2>"$LOG_DIR/speech$SUFFIX-$name.log") &
  pid=$!
  json=$(PYTHONPATH="$BUILD_DIR/python" "$PYTHON" "$BENCH_ROOT/bench/speech_client.py" \
    "$socket" --epochs "$EPOCHS" --step-ms "$step") || {
    kill "$pid" 2>/dev/null || true
    log "the trainer of $name failed; the node's log: $LOG_DIR/speech$SUFFIX-$name.log"
    exit 1
  }
  wait "$pid"
  node_json=$(tail -n 1 "$LOG_DIR/speech$SUFFIX-$name.json")
  "$PYTHON" -c '
import json, sys
d = json.loads(sys.argv[1])
d["node"] = json.loads(sys.argv[2])
print(json.dumps(d))' "$json" "$node_json"
}

# dataloader STEP_MS [FLAGS...]: bench/speech_dataloader.py's JSON line.
dataloader() {
  local step=$1
  shift
  "$PYTHON" "$BENCH_ROOT/bench/speech_dataloader.py" "$DATASET" --epochs "$DL_EPOCHS" \
    --workers 2 --batch-size "$BATCH" --step-ms "$step" "$@"
}

# node_phase PHASE STEP_MS: ROUNDS rounds of the three configurations (and at step 0 the
# DataLoader), the order turned round every other round.
node_phase() {
  local phase=$1 step=$2 round order config json
  for ((round = 1; round <= ROUNDS; round++)); do
    order=("${CONFIGS[@]}")
    ((round % 2)) || order=("${CONFIGS[2]}" "${CONFIGS[1]}" "${CONFIGS[0]}")
    [[ $phase != step0 ]] || order+=(buckets8)
    if [[ $phase == step0 ]] && ((round % 2)); then
      json=$(dataloader 0)
      record dataloader phase=step0 "round=$round" <<<"$json"
      log "DataLoader step 0 round $round: $(json_field "$json" samples_per_s) samples/s"
    fi
    for config in "${order[@]}"; do
      json=$(node "$phase-$config-r$round" "$config" "$step")
      record node "phase=$phase" "round=$round" "config=$config" <<<"$json"
      log "node $phase round $round, $config: $(json_field "$json" samples_per_s) samples/s," \
        "stall $(json_field "$json" stall_s) s, padding $(json_field "$json" padding)"
    done
    if [[ $phase == step0 ]] && ! ((round % 2)); then
      json=$(dataloader 0)
      record dataloader phase=step0 "round=$round" <<<"$json"
      log "DataLoader step 0 round $round: $(json_field "$json" samples_per_s) samples/s"
    fi
  done
}

# pooled_rate: the median step-0 rate of the node without buckets, both policies.
pooled_rate() {
  "$PYTHON" - "$RUNS" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
print(statistics.median(r["samples_per_s_incl_start"] for r in runs if r["bench"]["kind"] == "node"
                        and r["bench"]["phase"] == "step0"
                        and r["bench"]["config"] in ("in_order", "latency_aware")))
PY
}

report() {
  "$PYTHON" - "$RUNS" "$1" "$2" "$EPOCHS" "$DL_EPOCHS" "$ROUNDS" "${BUSY:-0}" "$DATASET" \
    "$BENCH_ROOT" <<'PY'
import json, os, statistics, sys

runs_file, machine, step, epochs, dl_epochs, rounds, busy, dataset, root = sys.argv[1:]
sys.path.insert(0, os.path.join(root, "bench"))
from report_format import fmt, medof, pct, verdict  # noqa: E402
runs = [json.loads(l) for l in open(runs_file)]
med = statistics.median
NAMES = {"in_order": "in_order, no buckets", "latency_aware": "latency_aware, no buckets",
         "buckets": "latency_aware, 16 learned buckets (the recipe)",
         "buckets8": "latency_aware, 8 learned buckets (MLPerf's count)"}


def node(phase, config):
    return [r for r in runs if r["bench"]["kind"] == "node" and r["bench"]["phase"] == phase
            and r["bench"]["config"] == config]


dl0 = [r for r in runs if r["bench"]["kind"] == "dataloader" and r["bench"]["phase"] == "step0"]
dl_bucket = next(r for r in runs if r["bench"]["kind"] == "dataloader"
                 and r["bench"]["phase"] == "buckets")
dl_demand = next(r for r in runs if r["bench"]["kind"] == "dataloader"
                 and r["bench"]["phase"] == "demand")
first = node("step0", "buckets")[0]["node"]
out = ["# Speech: conveyor-node vs PyTorch's DataLoader with torchaudio", "", machine]
out.append(f"- dataset: {dataset}: {first['dataset_size']} utterances spoken by espeak-ng "
           "(scripts/make-speech-set: 3-30 words, 8 voices x 8 variants, 120-210 words/min), "
           f"16 kHz FLAC, LibriSpeech layout, in the page cache; busy={busy}")
out.append(f"- node: config/examples/rnnt-librispeech.toml (the MLPerf RNN-T steps, DALI's "
           f"resampler, FFTW), batch {first['batch_size']}, {first.get('ranks', 1)} rank, served "
           f"to one Python trainer process (bench/speech_client.py over the `conveyor` module); "
           f"{epochs} epochs per run, {rounds} rounds per figure, medians; samples/s from the "
           "trainer's attach (the node's start-up included), where the DataLoader's leave out "
           "its workers' start-up")
out.append(f"- DataLoader: bench/speech_dataloader.py, the same steps in torch/torchaudio "
           f"(torchaudio Resample at rates rounded to 100 Hz, MelSpectrogram with the reference's "
           f"settings), 2 workers, batch 32, shuffle, {dl_epochs} epoch(s) per run; its samples/s "
           "from its first batch on (worker start-up left out)")
out.append(f"- 85% demand: step_ms = 1000 x 32 / (0.85 x R), R = the median node samples/s at "
           f"step 0 without buckets, both policies: {float(step):.1f} ms per batch (the same for "
           "every configuration and the DataLoader). Stall = the trainer's wait for batches / "
           "(wait + step)")
out.append(f"- command: bench/speech.sh {dataset} {epochs} {rounds} {dl_epochs}" +
           (" (BUSY=1)" if busy == "1" else ""))
out.append("")
out.append("| loader | samples/s at step 0 | stall at 85% demand | padded / real frames "
           "(per batch: mean, max) | peak RSS (MiB) |")
out.append("|---|---|---|---|---|")
rate, stall, pad = {}, {}, {}
for c in ("in_order", "latency_aware", "buckets", "buckets8"):
    r0, r85 = node("step0", c), node("demand", c)
    rate[c], stall[c] = medof(r0, "samples_per_s_incl_start"), medof(r85, "stall_fraction")
    pad[c] = medof(r0, "padding")
    peak = max(r["node"]["peak_rss_mb"] for r in r0 + r85)
    out.append(f"| conveyor-node, {NAMES[c]} | {fmt(rate[c])} | {pct(stall[c])} | "
               f"{fmt(pad[c], 3)} ({fmt(medof(r0, 'padding_batch_mean'), 3)}, "
               f"{fmt(max(r['padding_batch_max'] for r in r0), 3)}) | {fmt(peak, 0)} |")
dl_rate = medof([r["step0"] for r in dl0], "samples_per_s")
out.append(f"| DataLoader + torchaudio, 2 workers | {fmt(dl_rate)} | "
           f"{pct(dl_demand['stepped']['stall_fraction'])} | {fmt(medof(dl0, 'padding'), 3)} | - |")
out.append(f"| DataLoader, MLPerf's BucketingSampler (8 buckets) | "
           f"{fmt(dl_bucket['step0']['samples_per_s'])} | - | {fmt(dl_bucket['padding'], 3)} | - |")
out.append("")
ratios = []
for d in dl0:
    same = [r["samples_per_s_incl_start"] for r in node("step0", "buckets")
            if r["bench"]["round"] == d["bench"]["round"]]
    if same and d["step0"]["samples_per_s"]:
        ratios.append(same[0] / d["step0"]["samples_per_s"])
speedup = med(ratios)
ratio = stall["latency_aware"] / stall["in_order"] if stall["in_order"] else None
ratio_b = stall["buckets"] / stall["in_order"] if stall["in_order"] else None
out.append("| target | figure | goal | |")
out.append("|---|---|---|---|")
out.append(f"| node (the recipe) / DataLoader samples/s at step 0: median of the rounds' ratios "
           f"({', '.join(f'{x:.2f}' for x in ratios)}) | **{speedup:.2f}x** | >= 4x | "
           f"{verdict(speedup >= 4)} |")
out.append(f"| latency_aware / in_order stall at 85% demand, no buckets ({pct(stall['latency_aware'])}"
           f" vs {pct(stall['in_order'])}) | **{fmt(ratio, 2)}** | <= 0.3 | "
           f"{verdict(ratio is not None and ratio <= 0.3)} |")
out.append(f"| the same with the recipe's buckets ({pct(stall['buckets'])} vs "
           f"{pct(stall['in_order'])}) | {fmt(ratio_b, 2)} | (for information) | |")
out.append(f"| with buckets (the recipe's 16), padded / real frames at batch 32 | "
           f"**{fmt(pad['buckets'], 3)}** | <= 1.15 | {verdict(pad['buckets'] <= 1.15)} |")
out.append(f"| the same with MLPerf's 8 buckets | {fmt(pad['buckets8'], 3)} | <= 1.15 | "
           f"{verdict(pad['buckets8'] <= 1.15)} |")
out.append("")
cost = next((r["cost_ms"] for r in runs if "cost_ms" in r), None)
plain = next(r for r in runs if r["bench"]["kind"] == "node_plain")
s = plain.get("sample_ms") or {}
out.append("Per-sample cost (ms): DataLoader's __getitem__ in one process: " +
           (f"mean {cost['mean']:.2f}, p50 {cost['p50']:.2f}, p90 {cost['p90']:.2f}, "
            f"p99 {cost['p99']:.2f}, max {cost['max']:.2f}" if cost else "n/a") +
           f"; the node's chain (JSON sample_ms of a run with the node's own simulated trainer, "
           f"the recipe, step 0, {plain['samples_per_s']:.0f} samples/s): mean {fmt(s.get('mean'), 2)}"
           f", p50 {fmt(s.get('p50'), 2)}, p90 {fmt(s.get('p90'), 2)}, p99 {fmt(s.get('p99'), 2)}"
           f", max {fmt(s.get('max'), 2)}.")
out.append("")
steps_ms = plain.get("time_ms_per_sample") or {}
out.append("Node, mean ms per sample by stage (the same run): " +
           ", ".join(f"{k} {v:.3f}" for k, v in steps_ms.items()) + ".")
print("\n".join(out))
PY
}

main() {
  ((EPOCHS >= 1 && ROUNDS >= 1)) || {
    log "EPOCHS and ROUNDS must be 1 or more"
    exit 2
  }
  build_tools conveyor_python
  mkdir -p "$LOG_DIR" "$(dirname "$RESULT")"
  ensure_made "$DATASET" "$UTTERANCES utterances spoken by espeak-ng" \
    "$PYTHON" "$BENCH_ROOT/scripts/make-speech-set" "$UTTERANCES"
  busy_if_asked
  log "reading $DATASET once (into the page cache)"
  find "$DATASET" -type f -exec cat {} + >/dev/null
  local machine rate step json
  machine=$(machine_description)
  : >"$RUNS"

  log "step 0: $ROUNDS rounds of the DataLoader and 3 node configurations, $EPOCHS epoch(s) each"
  node_phase step0 0
  rate=$(pooled_rate)
  step=$(awk -v b="$BATCH" -v r="$rate" -v d="$DEMAND" 'BEGIN { printf "%.3f\n", 1000 * b / (d * r) }')
  log "node at step 0: $rate samples/s (no buckets, pooled); 85% demand: $step ms per batch"
  log "85% demand: $ROUNDS rounds of the 3 node configurations"
  node_phase demand "$step"
  log "DataLoader: MLPerf's BucketingSampler (8) at step 0; at $step ms; per-sample cost"
  dataloader 0 --bucketing 8 | record dataloader phase=buckets
  dataloader "$step" --skip-rate --cost-draws 1 | record dataloader phase=demand
  log "the node with its own simulated trainer at step 0 (the per-stage figures)"
  (cd "$BENCH_ROOT" && "$NODE_BIN" --topology "$RECIPE" --set "dataset.path=$DATASET" \
    --set gpus=1 --set "trainer.epochs=$EPOCHS" --log-level warn \
    2>"$LOG_DIR/speech$SUFFIX-plain.log") | record node_plain phase=step0
  machine+=$'\n'"- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
  report "$machine" "$step" >"$RESULT"
  cat "$RESULT"
}

main "$@"
