#!/usr/bin/env bash
# pipeline.autotune against a sweep of static configurations (issue 50), per recipe, in one
# invocation: the static ones are pipeline.preprocessors = cores/2, cores, 3 x cores/2 and
# 2 x cores (straggler actors and readers "auto", the window "auto"); autotune starts at "auto"
# and sizes itself. Three conditions, every configuration in each, the order rotating from
# round to round:
#   idle   trainer.step_ms 0 on an idle machine: samples/s;
#   busy   trainer.step_ms 0, two competing CPU-bound processes (normal priority) started a
#          third of the way into the run and stopped after it: samples/s (it must adapt, not
#          only start right);
#   d85    the trainer asking for 85% of the best idle static rate, idle: stall share.
# Targets: autotune >= 0.95 x the best static samples/s (idle and busy), its stall at 85% no
# worse than the best static one's + 0.5 pp, its peak in flight never above its window bound.
#
#   bench/autotune.sh [RECIPES=image,detection,unet3d,speech] [ROUNDS=1]
#
# KEEP=1 keeps the runs already in $LOG_DIR/autotune.jsonl and numbers this invocation's rounds
# from FIRST_ROUND (more rounds added to a bench; the report covers every run there; a recipe's
# 85% demand is recomputed from all its idle runs).
# The recipes and their sets: bench_recipe (bench/lib.sh).
# Writes bench/results/autotune.md; every JSON line stays in $LOG_DIR/autotune.jsonl, the
# autotuner's log lines (logger "autotune") in $LOG_DIR/autotune-*.log.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IFS=, read -r -a RECIPES <<<"${1:-image,detection,unet3d,speech}"
ROUNDS=${2:-1}
FIRST_ROUND=${FIRST_ROUND:-1}
LAST_ROUND=$((FIRST_ROUND + ROUNDS - 1))
RESULT="$BENCH_ROOT/bench/results/autotune.md"
RUNS="$LOG_DIR/autotune.jsonl"
CORES=$(nproc)

# The configurations: "p<N>" static, "auto" autotune.
configs() {
  local n seen=" " out=()
  for n in $(((CORES + 1) / 2)) "$CORES" $((3 * CORES / 2)) $((2 * CORES)); do
    [[ $seen == *" $n "* ]] || out+=("p$n")
    seen+="$n "
  done
  echo "${out[@]}" auto
}

config_sets() {
  if [[ $1 == auto ]]; then
    echo "--set pipeline.autotune=true"
  else
    echo "--set pipeline.preprocessors=${1#p}"
  fi
}

# node_run RECIPE CONFIG CONDITION STEP_MS ROUND: one run, recorded.
node_run() {
  local recipe=$1 config=$2 condition=$3 step=$4 round=$5 logfile json load_pids=() i
  logfile="$LOG_DIR/autotune-$recipe-$config-$condition-$round.log"
  if [[ $condition == busy ]]; then
    # Competitors a third of the way into a run as long as the idle one of this configuration.
    local delay
    delay=$(awk -v s="${IDLE_S[$config]:-20}" 'BEGIN { printf "%.1f\n", s / 3 }')
    for i in 1 2; do
      (sleep "$delay" && exec "$PYTHON" -c 'while True: pass') &
      load_pids+=($!)
    done
  fi
  # shellcheck disable=SC2046
  json=$(NODE_LOG="$logfile" recipe_node --set trainer.step_ms="$step" $(config_sets "$config"))
  if ((${#load_pids[@]} > 0)); then
    kill "${load_pids[@]}" 2>/dev/null || true
    wait "${load_pids[@]}" 2>/dev/null || true
  fi
  if [[ $condition == idle ]]; then
    IDLE_S[$config]=$(json_field "$json" wall_s)
  fi
  record node recipe="$recipe" config="$config" condition="$condition" round="$round" \
    step_ms="$step" <<<"$json"
  log "$recipe $config $condition (round $round): $(json_field "$json" samples_per_s) samples/s, stall $(json_field "$json" stall_fraction)"
}

# best_idle_rate RECIPE: the best static configuration's median idle samples/s.
best_idle_rate() {
  "$PYTHON" - "$RUNS" "$1" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in runs:
    b = r["bench"]
    if b["recipe"] == sys.argv[2] and b["condition"] == "idle" and b["config"] != "auto":
        by.setdefault(b["config"], []).append(r["samples_per_s"])
print(max(statistics.median(v) for v in by.values()))
PY
}

# rotate N WORDS...: the words rotated left by N.
rotate() {
  local n=$1
  shift
  local words=("$@") k
  k=$((n % ${#words[@]}))
  echo "${words[@]:k}" "${words[@]:0:k}"
}

run_recipe() {
  local recipe=$1 round config rate step
  bench_recipe "$recipe"
  log "$recipe: reading $DATASET once (into the page cache)"
  find "$DATASET" -type f -exec cat {} + >/dev/null
  declare -gA IDLE_S=()
  for round in $(seq "$FIRST_ROUND" "$LAST_ROUND"); do
    for config in $(rotate "$round" $(configs)); do
      node_run "$recipe" "$config" idle 0 "$round"
      node_run "$recipe" "$config" busy 0 "$round"
    done
  done
  rate=$(best_idle_rate "$recipe")
  step=$(awk -v r="$rate" -v b="$(batch_of "$recipe")" 'BEGIN { printf "%.3f\n", 1000 * b / (0.85 * r) }')
  log "$recipe: best static idle rate $rate samples/s; 85% demand: $step ms per batch"
  for round in $(seq "$FIRST_ROUND" "$LAST_ROUND"); do
    for config in $(rotate "$round" $(configs)); do
      node_run "$recipe" "$config" d85 "$step" "$round"
    done
  done
}

# batch_of RECIPE: its batch size per GPU (the JSON lines').
batch_of() {
  "$PYTHON" - "$RUNS" "$1" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["bench"]["recipe"] == sys.argv[2]:
        print(r["batch_size"])
        break
PY
}

report() {
  "$PYTHON" - "$RUNS" "$1" "$ROUNDS" "${KEEP:-0}" "$FIRST_ROUND" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
machine, rounds, keep, first = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
per_recipe = {}
for r in runs:
    per_recipe.setdefault(r["bench"]["recipe"], set()).add(r["bench"]["round"])
out = ["# pipeline.autotune against the best static configuration", "", machine,
       "- rounds: " + ", ".join(f"{k} {len(v)}" for k, v in per_recipe.items())
       + " (medians over them); static: pipeline.preprocessors as named "
       "(stragglers, readers, window \"auto\"); auto: pipeline.autotune = true",
       "- command (the last part): " + (f"KEEP=1 FIRST_ROUND={first} " if keep == "1" else "")
       + "bench/autotune.sh " + ",".join(sorted({r['bench']['recipe'] for r in runs}))
       + f" {rounds}", ""]
def med(xs):
    return statistics.median(xs) if xs else float("nan")
recipes = []
for r in runs:
    if r["bench"]["recipe"] not in recipes:
        recipes.append(r["bench"]["recipe"])
rows = ["| recipe | condition | figure | best static | its figure | autotune | ratio / difference | target | autotune changes; final counts |",
        "|---|---|---|---|---|---|---|---|---|"]
for recipe in recipes:
    mine = [r for r in runs if r["bench"]["recipe"] == recipe]
    for cond in ("idle", "busy", "d85"):
        by = {}
        for r in mine:
            if r["bench"]["condition"] == cond:
                by.setdefault(r["bench"]["config"], []).append(r)
        if "auto" not in by:
            continue
        statics = {c: v for c, v in by.items() if c != "auto"}
        auto = by["auto"]
        last = auto[-1]
        counts = ", ".join(f"{k} {int(v)}" for k, v in (last.get("autotune") or {}).items())
        changes = f"{med([r.get('autotune_changes', 0) for r in auto]):.0f}; {counts}"
        if cond == "d85":
            best = min(statics, key=lambda c: med([r["stall_fraction"] for r in statics[c]]))
            b = med([r["stall_fraction"] for r in statics[best]])
            a = med([r["stall_fraction"] for r in auto])
            d = 100 * (a - b)
            met = "met" if d <= 0.5 else "**not met**"
            rows.append(f"| {recipe} | 85% demand | stall | {best} | {100*b:.1f}% | {100*a:.1f}% | {d:+.1f} pp | <= +0.5 pp: {met} | {changes} |")
        else:
            best = max(statics, key=lambda c: med([r["samples_per_s"] for r in statics[c]]))
            b = med([r["samples_per_s"] for r in statics[best]])
            a = med([r["samples_per_s"] for r in auto])
            met = "met" if a >= 0.95 * b else "**not met**"
            rows.append(f"| {recipe} | step 0, {cond} | samples/s | {best} | {b:.1f} | {a:.1f} | {a/b:.3f}x | >= 0.95x: {met} | {changes} |")
out += rows
out += ["", "Every configuration, medians (samples/s at step 0 idle and busy; stall at 85%):", "",
        "| recipe | config | idle samples/s | busy samples/s | stall at 85% | peak in flight | peak RSS (MiB) |",
        "|---|---|---|---|---|---|---|"]
for recipe in recipes:
    mine = [r for r in runs if r["bench"]["recipe"] == recipe]
    configs = []
    for r in mine:
        if r["bench"]["config"] not in configs:
            configs.append(r["bench"]["config"])
    for c in configs:
        f = lambda cond, key: med([r[key] for r in mine if r["bench"]["config"] == c and r["bench"]["condition"] == cond])
        peak = max(r["peak_in_flight"] for r in mine if r["bench"]["config"] == c)
        bound = max((r.get("autotune") or {}).get("window_bound", 0) for r in mine if r["bench"]["config"] == c)
        peak = f"{peak} (bound {bound:.0f})" if bound else f"{peak}"
        rss = max(r["peak_rss_mb"] for r in mine if r["bench"]["config"] == c)
        out.append(f"| {recipe} | {c} | {f('idle', 'samples_per_s'):.1f} | {f('busy', 'samples_per_s'):.1f} | {100*f('d85', 'stall_fraction'):.1f}% | {peak} | {rss:.0f} |")
print("\n".join(out))
PY
}

main() {
  build_tools conveyor-pack
  mkdir -p "$LOG_DIR" "$(dirname "$RESULT")"
  trap stop_competitors EXIT
  local machine recipe
  machine=$(machine_description)
  if [[ ${KEEP:-0} != 1 ]]; then : >"$RUNS"; fi
  for recipe in "${RECIPES[@]}"; do
    run_recipe "$recipe"
  done
  report "$machine" | tee "$RESULT"
}

main
