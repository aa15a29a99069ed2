#!/usr/bin/env bash
# conveyor.Pipeline (a recipe in the Python process) against conveyor-node serving a Python
# client (conveyor.attach), the same recipe and settings (issue 48's target: Pipeline >= 0.97x
# the node's samples/s): the image recipe (config/default.toml) on a generated image folder and
# UNet3D (config/examples/unet3d-kits19.toml) on synthetic KiTS19-like cases. The trainer only
# iterates and releases (bench/python_pipeline.py); the two alternate round by round, the
# pipeline first in odd rounds.
#
#   bench/python_pipeline.sh [ROUNDS=5]
#
# RECIPES="image unet3d" chooses a part; IMAGES, IMAGE_EPOCHS, CASES, UNET3D_EPOCHS size them.
# Every run's JSON line goes to $LOG_DIR/python_pipeline.jsonl; bench/results/python_pipeline.md
# gets the medians and the median of the rounds' ratios.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${1:-5}
IMAGES=${IMAGES:-400}
IMAGE_EPOCHS=${IMAGE_EPOCHS:-8}
CASES=${CASES:-16}
UNET3D_EPOCHS=${UNET3D_EPOCHS:-40}
RESULT="$BENCH_ROOT/bench/results/python_pipeline.md"
RUNS="$LOG_DIR/python_pipeline.jsonl"

build_tools conveyor_python conveyor_pipeline_python conveyor-pack
export PYTHONPATH="$BUILD_DIR/python" CONVEYOR_NODE="$NODE_BIN"

# images DIR: an image folder of IMAGES synthetic JPEGs (class sub-folders), made once.
images() {
  local dir=$1
  [[ -d "$dir" ]] && return 0
  log "generating $IMAGES images into $dir"
  rm -rf "$dir.partial" "$dir.shards"
  "$PACK_BIN" --synthetic "$IMAGES" --images "$dir.partial" --out "$dir.shards" >&2
  rm -rf "$dir.shards"
  mv "$dir.partial" "$dir"
}

# settings RECIPE: the `set` of RECIPE's runs, as JSON.
settings() {
  case $1 in
    image) printf '{"dataset.path": "%s", "dataset.format": "folder", "pipeline.batch_size": 32, "trainer.epochs": %d, "gpus": 1}' \
      "$DATA_DIR/pipeline-images-$IMAGES" "$IMAGE_EPOCHS" ;;
    unet3d) printf '{"dataset.path": "%s", "pipeline.batch_size": 2, "trainer.epochs": %d, "gpus": 1}' \
      "$DATA_DIR/kits19-$CASES" "$UNET3D_EPOCHS" ;;
  esac
}

topology() {
  case $1 in
    image) echo "$BENCH_ROOT/config/default.toml" ;;
    unet3d) echo "$BENCH_ROOT/config/examples/unet3d-kits19.toml" ;;
  esac
}

# run ROUND MODE: one run of $recipe, its JSON line appended to $RUNS.
run() {
  log "$recipe, round $1: $2"
  local line
  line=$("$PYTHON" "$BENCH_ROOT/bench/python_pipeline.py" "$2" "$(topology "$recipe")" \
    "$(settings "$recipe")" 2>>"$LOG_DIR/python_pipeline-$recipe.log")
  echo "{\"recipe\": \"$recipe\", \"round\": $1, \"run\": $line}" | tee -a "$RUNS" >&2
}

mkdir -p "$LOG_DIR" "$(dirname "$RESULT")"
: >"$RUNS"
start_load=$(cut -d' ' -f1-3 /proc/loadavg)
for recipe in ${RECIPES:-image unet3d}; do
  case $recipe in
    image) data="$DATA_DIR/pipeline-images-$IMAGES" && images "$data" ;;
    unet3d) data="$DATA_DIR/kits19-$CASES" && ensure_made "$data" "$CASES synthetic UNet3D cases" \
      "$PACK_BIN" --synthetic-volumes "$CASES" --out ;;
  esac
  log "reading $data once (into the page cache)"
  find "$data" -type f -exec cat {} + >/dev/null
  alternating_rounds "$ROUNDS" pipeline node run
done

"$PYTHON" - "$RUNS" "$RESULT" "$start_load" "$ROUNDS" "$IMAGES" "$IMAGE_EPOCHS" "$CASES" \
  "$UNET3D_EPOCHS" "$BUILD_DIR" <<'PY'
import json, os, statistics, subprocess, sys, datetime
runs_file, result, start_load, rounds, images, image_epochs, cases, unet3d_epochs, build = sys.argv[1:]
runs = [json.loads(line) for line in open(runs_file)]
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                       capture_output=True, text=True).stdout.strip()
end_load = " ".join(open("/proc/loadavg").read().split()[:3])
out = ["# conveyor.Pipeline against conveyor-node serving a Python client", "",
       f"- date: {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC; {os.cpu_count()} cores; "
       f"load average at the start: {start_load}, at the end: {end_load}",
       f"- commit: {commit}{' + uncommitted changes' if dirty else ''}; build: {build}",
       f"- command: bench/python_pipeline.sh {rounds} (IMAGES={images}, "
       f"IMAGE_EPOCHS={image_epochs}, CASES={cases}, UNET3D_EPOCHS={unet3d_epochs})",
       "- the trainer (bench/python_pipeline.py) only iterates and releases; the two modes "
       "alternate round by round. **steady**: from the first batch to the last (start-up left "
       "out); **whole**: from the pipeline's opening or the node's start to the last batch",
       "- image: config/default.toml (decode, random_resized_crop 224, flip, normalize to "
       f"float32) on {images} synthetic JPEGs in an image folder, batch 32, {image_epochs} "
       "epochs; unet3d: config/examples/unet3d-kits19.toml on "
       f"{cases} synthetic KiTS19-like cases (conveyor-pack --synthetic-volumes), batch 2, "
       f"{unet3d_epochs} epochs; 1 GPU (host feeder), every other setting the recipe's"]
# The load before the runs says whether other work ran beside them (at the end it is the
# runs' own: every core busy).
if float(start_load.split()[0]) > 1.0:
    out.append("- **taken under load** (a 1-minute load average above 1 on these cores: other "
               "work ran beside it): the rounds' ratios spread widely; quote the medians")
out += ["",
       "| recipe | figure | Pipeline | node + attach | Pipeline / node: median of the rounds' "
       "ratios (each round's) | target |", "|---|---|---|---|---|---|"]
for recipe in dict.fromkeys(r["recipe"] for r in runs):
    mine = [r for r in runs if r["recipe"] == recipe]
    for figure, key in (("steady samples/s", "steady_samples_per_s"),
                        ("whole samples/s", "whole_samples_per_s")):
        by_round = {}
        for r in mine:
            by_round.setdefault(r["round"], {})[r["run"]["mode"]] = r["run"][key]
        ratios = [v["pipeline"] / v["node"] for v in by_round.values() if len(v) == 2]
        p = statistics.median(v["pipeline"] for v in by_round.values())
        n = statistics.median(v["node"] for v in by_round.values())
        ratio = statistics.median(ratios)
        target = (">= 0.97x: " + ("met" if ratio >= 0.97 else "**not met**")
                  if key == "steady_samples_per_s" else "(for information)")
        out.append(f"| {recipe} | {figure} | {p:.1f} | {n:.1f} | **{ratio:.3f}x** "
                   f"({', '.join(f'{x:.3f}' for x in ratios)}) | {target} |")
open(result, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
