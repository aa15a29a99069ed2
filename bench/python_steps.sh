#!/usr/bin/env bash
# A topology's Python step that returns its input unchanged (op = "python" after the crop) on
# the image recipe, against the same recipe without it, both through conveyor.Pipeline
# (bench/python_pipeline.py) with the same settings (issue 48's target: >= 0.9x the recipe's
# samples/s), and the per-sample cost of the crossing: the fields to a worker process and back
# (1 / with - 1 / without samples/s, times the cores, all of them busy). The two alternate round
# by round, the plain recipe first in odd rounds.
#
#   bench/python_steps.sh [ROUNDS=5]
#
# IMAGES and EPOCHS size the set. Every run's JSON line goes to $LOG_DIR/python_steps.jsonl;
# bench/results/python_steps.md gets the medians and the median of the rounds' ratios.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${1:-5}
IMAGES=${IMAGES:-400}
EPOCHS=${EPOCHS:-6}
RESULT="$BENCH_ROOT/bench/results/python_steps.md"
RUNS="$LOG_DIR/python_steps.jsonl"

build_tools conveyor_python conveyor_pipeline_python conveyor-pack
data="$DATA_DIR/pipeline-images-$IMAGES"
ensure_made "$data" "$IMAGES synthetic JPEGs in an image folder" bash -c \
  '"$0" --synthetic "$1" --images "$2" --out "$2.shards" && rm -rf "$2.shards"' "$PACK_BIN" \
  "$IMAGES"

# topology FILE [STEP]: the image recipe (decode, random_resized_crop 224, flip, normalize) on
# the set, with STEP's tables after the crop.
topology() {
  cat >"$1" <<TOML
gpus = 1
[dataset]
path = "$data"
format = "folder"
[pipeline]
batch_size = 32
[trainer]
epochs = $EPOCHS
[monitor]
interval_ms = 100000
[[transform]]
op = "decode"
[[transform]]
op = "random_resized_crop"
size = 224
${2:-}
[[transform]]
op = "flip"
[[transform]]
op = "normalize"
TOML
}

mkdir -p "$LOG_DIR/python_steps" "$(dirname "$RESULT")"
printf 'def identity(fields, rng):\n    return {"image": fields["image"]}\n' \
  >"$LOG_DIR/python_steps/bench_steps.py"
topology "$LOG_DIR/python_steps/plain.toml"
topology "$LOG_DIR/python_steps/step.toml" \
  "$(printf '[[transform]]\nop = "python"\nfunction = "bench_steps:identity"')"
export PYTHONPATH="$BUILD_DIR/python:$LOG_DIR/python_steps"

: >"$RUNS"
start_load=$(cut -d' ' -f1-3 /proc/loadavg)
log "reading $data once (into the page cache)"
find "$data" -type f -exec cat {} + >/dev/null
# run ROUND VARIANT: one run through conveyor.Pipeline, its JSON line appended to $RUNS.
run() {
  log "round $1: $2"
  local line
  line=$("$PYTHON" "$BENCH_ROOT/bench/python_pipeline.py" pipeline \
    "$LOG_DIR/python_steps/$2.toml" '{}' 2>>"$LOG_DIR/python_steps.log")
  echo "{\"variant\": \"$2\", \"round\": $1, \"run\": $line}" | tee -a "$RUNS" >&2
}
alternating_rounds "$ROUNDS" plain step run

"$PYTHON" - "$RUNS" "$RESULT" "$start_load" "$ROUNDS" "$IMAGES" "$EPOCHS" "$BUILD_DIR" <<'PY'
import datetime, json, os, statistics, subprocess, sys
runs_file, result, start_load, rounds, images, epochs, build = sys.argv[1:]
runs = [json.loads(line) for line in open(runs_file)]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
end_load = " ".join(open("/proc/loadavg").read().split()[:3])
cores = os.cpu_count()
by_round = {}
for r in runs:
    by_round.setdefault(r["round"], {})[r["variant"]] = r["run"]["steady_samples_per_s"]
ratios = [v["step"] / v["plain"] for v in by_round.values() if len(v) == 2]
costs = [(1 / v["step"] - 1 / v["plain"]) * cores * 1e6 for v in by_round.values() if len(v) == 2]
plain = statistics.median(v["plain"] for v in by_round.values())
step = statistics.median(v["step"] for v in by_round.values())
ratio = statistics.median(ratios)
out = ["# A Python step in a topology: the image recipe with an identity step against without", "",
       f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC; {cores} cores; load average "
       f"at the start: {start_load}, at the end: {end_load}",
       f"- commit: {commit}; build: {build}",
       f"- command: bench/python_steps.sh {rounds} (IMAGES={images}, EPOCHS={epochs})",
       f"- decode, random_resized_crop 224, [python identity], flip, normalize on {images} "
       f"synthetic JPEGs (an image folder), batch 32, {epochs} epochs, through conveyor.Pipeline "
       "(bench/python_pipeline.py: the trainer only iterates and releases); steady samples/s, "
       "from the first batch to the last",
       "- crossing: the uint8 224 x 224 x 3 image to a worker process and back (a memfd each "
       "way, the message, the call), per sample in core time: (1 / with - 1 / without) x cores"]
# The load before the runs says whether other work ran beside them (at the end it is the
# runs' own: every core busy).
if float(start_load.split()[0]) > 1.0:
    out.append("- **taken under load** (a 1-minute load average above 1): quote the medians")
out += ["", "| figure | value | target |", "|---|---|---|",
        f"| without the step, samples/s | {plain:.1f} | |",
        f"| with the identity step, samples/s | {step:.1f} | |",
        f"| with / without: median of the rounds' ratios ({', '.join(f'{x:.3f}' for x in ratios)})"
        f" | **{ratio:.3f}x** | >= 0.9x: {'met' if ratio >= 0.9 else '**not met**'} |",
        f"| crossing, core-us per sample: median ({', '.join(f'{c:.0f}' for c in costs)}) | "
        f"**{statistics.median(costs):.0f}** | (reported) |"]
open(result, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
