#!/usr/bin/env bash
# UNet3D (MLPerf, KiTS19 layout; issue 31): conveyor-node on the UNet3D recipe
# (config/examples/unet3d-kits19.toml) against PyTorch's DataLoader running the reference's own
# Python transforms (bench/unet3d_dataloader.py), on one set of synthetic cases
# (conveyor-pack --synthetic-volumes: heavy-tailed depth 128..640, sides 128..400).
#
#   bench/unet3d.sh [DIR=build-bench/data/kits19-60] [EPOCHS=10] [ROUNDS=5] [DL_EPOCHS=2]
#        BUSY=1: two competing CPU-bound processes for the whole run
#
# DIR is generated when it does not exist (60 cases, ~4 GB, aside and renamed). Its files are
# read once first, so that every run finds them in the page cache. EPOCHS is per node run,
# DL_EPOCHS per DataLoader run. The node's first epoch indexes every case's objects on first
# read: its figures come as "steady" (the epochs after the first, from the JSON line's
# epoch_end_s and epoch_stall_s) and "whole" (every epoch). In one invocation:
#   1. conveyor-node at trainer.step_ms 0 (samples/s), batching.policy in_order and
#      latency_aware, gpus 1 and 2 (host feeders, the node's simulated trainers), ROUNDS rounds,
#      the policies' order alternating; in each round also the DataLoader (2 workers, batch 2)
#      at step 0 on 1 GPU (first or last, alternating), so that both meet the same machine load:
#      the speedup is the median of the rounds' node / DataLoader ratios;
#   2. the step time of 85% demand: step_ms(G) = 1000 x G x batch_size / (0.85 x R(G)), R(G) the
#      median steady step-0 rate at G GPUs, both policies pooled (the rate the CPUs prepare,
#      whatever the policy); conveyor-node at it, both policies, ROUNDS rounds: the stall share;
#   3. the DataLoader at step_ms(1) on 1 GPU, at step 0 and step_ms(2) on 2 GPUs (2 rank
#      processes, 2 workers each), and the reference's per-sample cost on one process (each
#      case twice);
#   4. the node's peak RSS (its JSON line's peak_rss_mb, the process's high-water mark) and its
#      per-sample chain cost (the JSON line's sample_ms when it has one; else the monitor's
#      per-preprocessor p50/p90/p99 from the log of an in_order step-0 run).
# Targets: node steady samples/s >= 5x the DataLoader's at 1 GPU (moonshot 7.5x); latency_aware
# steady stall at 85% demand <= 0.3x in_order's; node peak RSS < 2 GiB.
# Writes bench/results/unet3d.md (unet3d_busy.md with BUSY=1); every JSON line stays in
# build-bench/bench-logs/unet3d*.jsonl, the node's logs beside it. About 6 minutes here.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DATASET=${1:-$DATA_DIR/kits19-60}
EPOCHS=${2:-10}
ROUNDS=${3:-5}
DL_EPOCHS=${4:-2}
CASES=60
DEMAND=0.85
TOPOLOGY_FILE=${TOPOLOGY:-$BENCH_ROOT/config/examples/unet3d-kits19.toml}
SUFFIX=$([[ "${BUSY:-0}" == 1 ]] && echo _busy || true)
RESULT="$BENCH_ROOT/bench/results/unet3d$SUFFIX.md"
RUNS="$LOG_DIR/unet3d$SUFFIX.jsonl"
POLICIES=(in_order latency_aware)
GPU_COUNTS=(1 2)

# steady_state < JSON: a node run's JSON line with its steady state added: the epochs after the
# first (which indexes every case's objects, and maps its files, on first read):
# steady_samples_per_s (their samples over the time from the first epoch's end to the last's)
# and, with a trainer step, steady_stall_fraction (their stall over that stall plus their share
# of the steps: every epoch has as many batches).
steady_state() {
  "$PYTHON" -c '
import json, sys
d = json.loads(sys.stdin.read())
ends = d.get("epoch_end_s") or []
if len(ends) >= 2:
    d["steady_samples_per_s"] = (len(ends) - 1) * d["epoch_samples"] / (ends[-1] - ends[0])
    if d["step_ms"] > 0:
        stall = sum(d["epoch_stall_s"][1:len(ends)])
        steps = d["stall_s"] / d["stall_fraction"] - d["stall_s"] if d["stall_fraction"] \
            else d["batches"] * d["step_ms"] / 1000
        steady_steps = steps * (len(ends) - 1) / len(ends)
        d["steady_stall_fraction"] = stall / (stall + steady_steps)
print(json.dumps(d))'
}

# node NAME GPUS POLICY STEP_MS: one conveyor-node run; prints its JSON line.
node() {
  local name=$1 gpus=$2 policy=$3 step=$4
  "$NODE_BIN" --topology "$TOPOLOGY_FILE" --set "dataset.path=$DATASET" \
    --set "gpus=$gpus" --set "batching.policy=$policy" --set "trainer.step_ms=$step" \
    --set "trainer.epochs=$EPOCHS" --set monitor.interval_ms=200 \
    --log-level info 2>"$LOG_DIR/unet3d$SUFFIX-$name.log"
}

# node_phase STEP_MS_G1 STEP_MS_G2 PHASE: ROUNDS rounds of both policies at 1 and 2 GPUs; at
# step 0, each round also runs the DataLoader at step 0 on 1 GPU (first in odd rounds, last in
# even ones), so that both see the same machine load.
node_phase() {
  local step1=$1 step2=$2 phase=$3 round gpus step policy order json
  for ((round = 1; round <= ROUNDS; round++)); do
    if [[ $phase == step0 ]] && ((round % 2)); then
      dataloader_round "$round"
    fi
    for gpus in "${GPU_COUNTS[@]}"; do
      step=$([[ $gpus == 1 ]] && echo "$step1" || echo "$step2")
      order=("${POLICIES[@]}")
      ((round % 2)) || order=("${POLICIES[1]}" "${POLICIES[0]}")
      for policy in "${order[@]}"; do
        json=$(node "$phase-g$gpus-$policy-r$round" "$gpus" "$policy" "$step")
        [[ "$(json_field "$json" lost)" == 0 && "$(json_field "$json" duplicates)" == 0 ]] || {
          log "a node run lost or repeated samples: $json"
          exit 1
        }
        steady_state <<<"$json" | record node "phase=$phase" "round=$round"
        log "node $phase round $round, $gpus GPU(s), $policy: $(json_field "$json" samples_per_s)" \
          "samples/s (steady $(json_field "$(tail -n 1 "$RUNS")" steady_samples_per_s)), stall" \
          "$(json_field "$json" stall_fraction), peak RSS $(json_field "$json" peak_rss_mb) MiB"
      done
    done
    if [[ $phase == step0 ]] && ! ((round % 2)); then
      dataloader_round "$round"
    fi
  done
}

# dataloader_round ROUND: the DataLoader at step 0, 1 GPU.
dataloader_round() {
  local json
  json=$(dataloader 1 0)
  record dataloader phase=step0 "round=$1" <<<"$json"
  log "DataLoader step0 round $1, 1 GPU: $(json_field "$json" samples_per_s) samples/s"
}

# pooled_rate GPUS: the median steady step-0 rate of the node at GPUS, both policies.
pooled_rate() {
  "$PYTHON" - "$RUNS" "$1" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
rates = [r["steady_samples_per_s"] for r in runs if r["bench"]["kind"] == "node"
         and r["bench"]["phase"] == "step0" and r["gpus"] == int(sys.argv[2])]
print(statistics.median(rates))
EOF
}

# step_for GPUS RATE BATCH: the step time (ms) at which GPUS trainers ask DEMAND x RATE samples/s.
step_for() {
  awk -v g="$1" -v r="$2" -v b="$3" -v d="$DEMAND" \
    'BEGIN { printf "%.3f\n", 1000 * g * b / (d * r) }'
}

# dataloader GPUS STEP_MS [FLAGS...]: bench/unet3d_dataloader.py's JSON line.
dataloader() {
  local gpus=$1 step=$2
  shift 2
  "$PYTHON" "$BENCH_ROOT/bench/unet3d_dataloader.py" "$DATASET" --epochs "$DL_EPOCHS" \
    --gpus "$gpus" --workers 2 --batch-size 2 --step-ms "$step" "$@"
}

# report MACHINE STEP1 STEP2: the Markdown page, from RUNS.
report() {
  "$PYTHON" - "$RUNS" "$1" "$2" "$3" "$LOG_DIR/unet3d$SUFFIX-step0-g1-in_order-r1.log" \
    "$EPOCHS" "$DL_EPOCHS" "$ROUNDS" "${BUSY:-0}" "$DATASET" "$TOPOLOGY_FILE" "$BENCH_ROOT" <<'EOF'
import json, os, re, statistics, sys

(runs_file, machine, step1, step2, log0, epochs, dl_epochs, rounds, busy, dataset, topology,
 root) = sys.argv[1:]
sys.path.insert(0, os.path.join(root, "bench"))
from report_format import fmt, medof, pct, verdict  # noqa: E402
runs = [json.loads(l) for l in open(runs_file)]
steps = {1: float(step1), 2: float(step2)}
med = statistics.median


def node_runs(phase, gpus, policy=None):
    return [r for r in runs if r["bench"]["kind"] == "node" and r["bench"]["phase"] == phase
            and r["gpus"] == gpus and (policy is None or r["policy"] == policy)]


def dl_runs(gpus, key):
    return [r for r in runs if r["bench"]["kind"] == "dataloader" and r["gpus"] == gpus
            and key in r]


def stall_ratio(la, io):
    # both near zero: no figure (the trainer hardly waits either way)
    return None if la is None or io is None or io < 0.002 else la / io


node0 = node_runs("step0", 1, "in_order")[0]
batch = node0["batch_size"]
out = []
out.append("# UNet3D: conveyor-node vs PyTorch's DataLoader with the reference's transforms")
out.append("")
out.append(machine)
out.append(f"- dataset: {dataset}: {node0['dataset_size']} synthetic MLPerf-layout cases "
           "(conveyor-pack --synthetic-volumes; depth 128..640, sides 128..400), in the page "
           f"cache (read once before the runs); busy={busy}")
out.append(f"- node: {os.path.relpath(topology, root)}, batch {batch} per GPU, "
           f"{node0['preprocessors']} preprocessors, window {node0['window_samples']} samples, "
           f"host feeders (simulated trainers), {epochs} epochs per run, {rounds} rounds per "
           "figure, medians; the two policies alternate in order from round to round. "
           "**steady** = the epochs after the first (the first indexes every case's objects on "
           "its first read); whole = every epoch, the first included")
out.append(f"- DataLoader: bench/unet3d_dataloader.py, {dl_epochs} epochs per run: the "
           "reference's PytTrain, RandBalancedCrop and Compose([RandFlip, Cast, "
           "RandomBrightnessAugmentation, GaussianNoise]) verbatim "
           "(tests/python/unet3d_reference.py), DataLoader(batch 2, 2 workers per GPU, shuffle / "
           "DistributedSampler per rank, drop_last, persistent_workers off as in the reference, "
           "no pin_memory: no CUDA); 2 GPUs = 2 rank processes with 2 workers each (4 workers "
           "on this machine's cores), each rank's trainer on its own like the node's. Its steady "
           "figures leave out only the first batch (worker start-up; every epoch alike "
           "otherwise, the workers' restarts included); its 1-GPU step-0 runs are one per "
           "round of the node's, in between")
out.append(f"- 85% demand: step_ms(G) = 1000 x G x {batch} / (0.85 x R(G)), R(G) = the median "
           "steady node samples/s at step 0 at G GPUs over both policies: "
           f"{steps[1]:.2f} ms at 1 GPU, {steps[2]:.2f} ms at 2 GPUs (the same step for the "
           "DataLoader). Stall = the trainers' wait for batches / (wait + step)")
out.append(f"- command: bench/unet3d.sh {dataset} {epochs} {rounds} {dl_epochs}" +
           (" (BUSY=1)" if busy == "1" else ""))
out.append("")
out.append("| loader | GPUs | policy | samples/s at step 0: steady (whole) | "
           "stall at 85% demand: steady (whole) | samples/s at 85%: steady | peak RSS (MiB) |")
out.append("|---|---|---|---|---|---|---|")
rate, whole_rate, stall, whole_stall, rss = {}, {}, {}, {}, []
for g in (1, 2):
    for p in ("in_order", "latency_aware"):
        r0, r85 = node_runs("step0", g, p), node_runs("demand", g, p)
        rate[g, p], whole_rate[g, p] = medof(r0, "steady_samples_per_s"), medof(r0, "samples_per_s")
        stall[g, p] = medof(r85, "steady_stall_fraction")
        whole_stall[g, p] = medof(r85, "stall_fraction")
        peak = max(r["peak_rss_mb"] for r in r0 + r85)
        rss.append(peak)
        out.append(f"| conveyor-node | {g} | {p} | {fmt(rate[g, p])} ({fmt(whole_rate[g, p])}) | "
                   f"{pct(stall[g, p])} ({pct(whole_stall[g, p])}) | "
                   f"{fmt(medof(r85, 'steady_samples_per_s'))} | {fmt(peak, 0)} |")
    d = dl_runs(g, "stepped")[0]["stepped"]
    rate[g, "dl"] = medof(dl_runs(g, "step0"), "samples_per_s")
    whole_rate[g, "dl"] = med([r["step0"]["samples_per_s_incl_start"] for r in dl_runs(g, "step0")])
    out.append(f"| DataLoader | {g} | (in order) | {fmt(rate[g, 'dl'])} "
               f"({fmt(whole_rate[g, 'dl'])}) | "
               f"{pct(d['stall_fraction_after_first'])} ({pct(d['stall_fraction'])}) | "
               f"{fmt(d['samples_per_s'])} | - |")
out.append("")


def round_ratios(key, dl_key):
    # 1 GPU: per round, the mean of the node's two policies / the DataLoader in the same round.
    out = []
    for d in dl_runs(1, "step0"):
        same = [r[key] for r in node_runs("step0", 1) if r["bench"]["round"] == d["bench"]["round"]]
        if same and d["step0"][dl_key]:
            out.append(statistics.mean(same) / d["step0"][dl_key])
    return out


steady_ratios = round_ratios("steady_samples_per_s", "samples_per_s")
whole_ratios = round_ratios("samples_per_s", "samples_per_s_incl_start")
node_steady = {g: medof(node_runs("step0", g), "steady_samples_per_s") for g in (1, 2)}
speedup, whole_speedup = med(steady_ratios), med(whole_ratios)
speedup2 = node_steady[2] / rate[2, "dl"] if rate[2, "dl"] else None
peak = max(rss)
out.append("| target | figure | goal | |")
out.append("|---|---|---|---|")
out.append(f"| node / DataLoader samples/s at step 0, 1 GPU, steady: median of the rounds' ratios "
           f"({', '.join(f'{x:.2f}' for x in steady_ratios)}) | **{speedup:.2f}x** | "
           f">= 5x (moonshot 7.5x) | {verdict(speedup >= 5)}; moonshot {verdict(speedup >= 7.5)} |")
out.append(f"| the same, whole runs ({epochs} node epochs, the first included; the DataLoader's "
           f"worker start-up included) ({', '.join(f'{x:.2f}' for x in whole_ratios)}) | "
           f"{whole_speedup:.2f}x | >= 5x (moonshot 7.5x) | {verdict(whole_speedup >= 5)}; "
           f"moonshot {verdict(whole_speedup >= 7.5)} |")
out.append(f"| the same, 2 GPUs, steady (medians {fmt(node_steady[2])} vs {fmt(rate[2, 'dl'])}) | "
           f"{fmt(speedup2, 2)}{'x' if speedup2 else ''} | (for information) | |")
for g, which, s in ((1, "steady", stall), (2, "steady", stall), (1, "whole", whole_stall)):
    r = stall_ratio(s[g, "latency_aware"], s[g, "in_order"])
    bold = "**" if (g, which) == (1, "steady") else ""
    goal = "<= 0.3" if which == "steady" else "(for information)"
    out.append(f"| latency_aware / in_order stall at 85% demand, {g} GPU{'s' if g > 1 else ''}, "
               f"{which} ({pct(s[g, 'latency_aware'])} vs {pct(s[g, 'in_order'])}) | "
               f"{bold}{fmt(r, 2)}{bold} | {goal} | " +
               ("n/a: in_order hardly stalls" if r is None else
                verdict(r <= 0.3) if which == "steady" else "") + " |")
out.append(f"| node peak RSS, every run | **{peak:.0f} MiB** | < 2 GiB (2048 MiB) | "
           f"{verdict(peak < 2048)} |")
out.append("")

# Per-sample costs.
cost = next((r["cost_ms"] for r in runs if "cost_ms" in r), None)
out.append("Per-sample cost (ms):")
out.append("")
out.append("| what | samples | mean | p50 | p90 | p99 | max |")
out.append("|---|---|---|---|---|---|---|")
if cost:
    out.append(f"| reference, one Python process: np.load x and y + crop + transforms, each case "
               f"twice | {cost['samples']} | {cost['mean']:.1f} | {cost['p50']:.1f} | "
               f"{cost['p90']:.1f} | {cost['p99']:.1f} | {cost['max']:.1f} |")
note = None
if "sample_ms" in node0:
    s = node0["sample_ms"]
    out.append(f"| conveyor-node chain (JSON sample_ms; in_order, 1 GPU, step 0, round 1) | "
               f"{s.get('samples', 'n/a')} | {fmt(s.get('mean'))} | {fmt(s.get('p50'))} | "
               f"{fmt(s.get('p90'))} | {fmt(s.get('p99'))} | {fmt(s.get('max'))} |")
else:
    # The monitor's last line per preprocessor: its sliding window (the last 1024 samples) of
    # the time each sample spent in it.
    last = {}
    pattern = re.compile(r"(preprocessor-\d+)\s+mailbox=\S+\s+items=(\d+)\s.*?"
                         r"p50=([\d.]+)ms p90=([\d.]+)ms p99=([\d.]+)ms")
    if os.path.exists(log0):
        for line in open(log0, errors="replace"):
            m = pattern.search(line)
            if m:
                last[m.group(1)] = m.groups()[1:]
    for name in sorted(last):
        items, p50, p90, p99 = last[name]
        out.append(f"| conveyor-node {name}, monitor window (in_order, 1 GPU, step 0, round 1, "
                   f"every epoch) | {items} | n/a | {float(p50):.1f} | {float(p90):.1f} | "
                   f"{float(p99):.1f} | n/a |")
    note = ("The node's JSON line has no per-sample cost distribution (only each step's mean, "
            "below); the node rows are the monitor's per-preprocessor windows from its log: "
            "no mean or max, reading left out, the last report before the end.")
out.append("")
if note:
    out.append(note)
    out.append("")
steps_ms = node0.get("time_ms_per_sample") or {}
if steps_ms:
    out.append("Node, mean ms per sample by stage (in_order, 1 GPU, step 0, round 1, every "
               "epoch): " + ", ".join(f"{k} {v:.2f}" for k, v in steps_ms.items()) + ".")
print("\n".join(out))
EOF
}

main() {
  ((EPOCHS >= 2)) || {
    log "EPOCHS must be 2 or more (the steady figures leave the first epoch out)"
    exit 2
  }
  build_tools conveyor-pack
  [[ -f "$TOPOLOGY_FILE" ]] || {
    log "no recipe at $TOPOLOGY_FILE"
    exit 1
  }
  mkdir -p "$LOG_DIR" "$(dirname "$RESULT")"
  ensure_made "$DATASET" "$CASES synthetic UNet3D cases" "$PACK_BIN" --synthetic-volumes "$CASES" \
    --out
  busy_if_asked
  log "reading $DATASET once (into the page cache)"
  cat "$DATASET"/*.npy >/dev/null
  local machine
  machine=$(machine_description)
  : >"$RUNS"

  log "conveyor-node at step 0: $ROUNDS rounds x 2 policies x 1 and 2 GPUs, $EPOCHS epoch(s) each"
  node_phase 0 0 step0
  local batch r1 r2 step1 step2
  batch=$(json_field "$(head -n 1 "$RUNS")" batch_size)
  r1=$(pooled_rate 1)
  r2=$(pooled_rate 2)
  step1=$(step_for 1 "$r1" "$batch")
  step2=$(step_for 2 "$r2" "$batch")
  log "node at step 0: $r1 samples/s at 1 GPU, $r2 at 2; 85% demand: step $step1 ms, $step2 ms"

  log "conveyor-node at 85% demand"
  node_phase "$step1" "$step2" demand

  log "DataLoader, 1 GPU: step $step1 ms, and the per-sample cost (each case twice)"
  dataloader 1 "$step1" --skip-rate --cost-draws 2 | record dataloader phase=demand
  log "DataLoader, 2 GPUs: step 0 and step $step2 ms"
  dataloader 2 "$step2" | record dataloader phase=both
  machine+=$'\n'"- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

  report "$machine" "$step1" "$step2" >"$RESULT"
  cat "$RESULT"
}

main "$@"
