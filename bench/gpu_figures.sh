#!/usr/bin/env bash
# Every figure the GPU machine is wanted for, in one bounded run that writes one Markdown report:
# for a session with a few minutes of device time. Runs inside the GPU bundle (scripts/gpu-bundle)
# as ./run-figures. The steps, in this order, each under `timeout` (its limit in seconds), a
# failing or timed-out one reported and the next one run all the same:
#   1  tests       ./run-tests: which test programs passed, skipped, failed              (80)
#   2  sanitizer   ./run-sanitizer test_cuda_slot_ring test_cuda_feeder: the summary line
#                  of memcheck, racecheck and synccheck for each                         (40)
#   3  cuda-bench  ./run bench_h2d, ./run bench_gpu_normalize (their defaults): JSON lines  (30)
#   4a dataset     the heavy-tailed image folder (lib.sh's ensure_dataset: bench_ceiling
#                  --generate on every core; 3000 JPEGs, 10% of them 1800-3200 px), kept in
#                  work/data/heavy-3000 for later runs and for step 6                    (30)
#   4b node        per round (--rounds): bench_ceiling on every core, conveyor-node with the
#                  CUDA feeder (gpus = [0]), with a host feeder (gpus = 1), with the
#                  CUDA feeder and the window of batches alone (pipeline.window_samples =
#                  192, the default before the pool's share), and with the CUDA feeder and
#                  decode.on = "auto" (JPEGs shared with nvJPEG), in_order, batch 64,
#                  trainer.step_ms 0, 2 epochs (lib.sh's run_ceiling, run_node);
#                  node / ceiling for each, nvJPEG's run / the CUDA feeder's             (65)
#   5  policies    latency_aware vs in_order, batch 64, 2 epochs, at a demand of 85% of step
#                  4b's node rate (trainer.step_ms = 64 x 1000 / (0.85 x samples/s), as
#                  bench/contended.sh sets it): stall fraction and samples/s             (30)
#   6  train       ./run-train --steps 50 --warmup 10 --images 3000 --workers $(nproc):
#                  ResNet-50 fed six ways (a user's Dataset under torch's DataLoader and
#                  under conveyor.DataLoader, the node decoding with nvJPEG too (decode.on =
#                  "auto") against its CPU-only run, among them), its table             (165)
#   7  train3d     ./run-train --model unet3d --steps 150 --warmup 10 --workers $(nproc)
#                  --cases 40: a small 3D U-Net trained from the MLPerf UNet3D reference's
#                  own PytTrain (a user's Dataset) under torch's DataLoader and under
#                  conveyor.DataLoader, and from synthetic tensors, batch 2; its table    (120)
# The limits add up to 9 min 20 s, and each step gets 5 s more to die after its TERM: the run
# stays under 10 minutes. On the H200 machine's 16 cores at 693726e steps 1-6 took 246 s (the
# tests 11 s, the ResNet's six feeds 145 s) and step 7 about 88 s (its dataset 3 s, each of its
# three feeds about 28 s, 9-11 s of them timed): its old limit of 90 s cut it off as it wrote
# its table. Where one call may last 10 minutes at most, run it in two:
# --only "tests sanitizer cuda-bench dataset node policies", then --only "train train3d" into
# the same --out (gpu.md keeps the first call's steps). The Python module for steps 6 and 7 is
# compiled (./build-python) in the background during steps 1 and 2, which measure no CPU time;
# step 3 waits for it.
#
# Usage: ./run-figures [--out DIR] [--quick] [--images N] [--rounds N] [--only "STEP..."]
#   --out DIR      where gpu.md, logs/ (every program's output) and train/ go
#                  (default work/gpu-figures in the bundle)
#   --images N     the image folder's size (default 3000)
#   --rounds N     rounds of steps 4b and 5 (default 3)
#   --only STEPS   run only these steps (names above, e.g. --only "node policies"; 4b and 5
#                  bring 4a), keeping the other steps' results in --out's gpu.md
#   --quick        a DRY RUN of the script, not a measurement: 256 images, 1 round, short
#                  CUDA benchmarks, step 6 on the CPU (--device cpu --model resnet18
#                  --batch 8 --steps 3 --warmup 1 --workers 2) and step 7 too (--batch 1
#                  --steps 1 --warmup 1 --workers 2 --cases 6 --amp off; a CPU takes about
#                  25 s a step there, so its limit is 300 s). Where there is no GPU, with
#                  CONVEYOR_REQUIRE_GPU=0 (or the CUDA tests fail): the CUDA steps fail or
#                  skip, and gpu.md says which and why.
# TRAIN_PYTHON: the interpreter with torch and torchvision (default python3), also the one
# that reads the JSON lines. Exit code: 0 when every step ran and measured, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self=$here/$(basename "${BASH_SOURCE[0]}")
bundle=$(cd "$here/.." && pwd)
if [[ ! -x $bundle/run || ! -d $bundle/tools ]]; then
  echo "gpu_figures.sh: runs inside the GPU bundle (scripts/gpu-bundle), as ./run-figures" >&2
  exit 2
fi
export BUILD_DIR=${BUILD_DIR:-$bundle/work} NO_BUILD=1
source "$here/lib.sh"
NODE_BIN=$bundle/tools/conveyor-node
CEILING_BIN=$bundle/tools/bench_ceiling
PACK_BIN=$bundle/tools/conveyor-pack
PYTHON=${TRAIN_PYTHON:-python3}

# lib.sh's with_cpu_time reads the CPU time with /usr/bin/time, which a bare image may lack:
# then the same JSON line and cpu_s, from the children's rusage in Python.
if [[ ! -x /usr/bin/time ]]; then
  with_cpu_time() {
    "$PYTHON" -c '
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True)
if p.returncode:
    sys.exit(p.returncode)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(p.stdout.strip()[:-1] + ",\"cpu_s\":%.3f}" % (r.ru_utime + r.ru_stime))' "$@"
  }
fi

all_steps=(tests sanitizer cuda-bench dataset node policies train train3d)
declare -A limit=([tests]=80 [sanitizer]=40 [cuda-bench]=30 [dataset]=30 [node]=65
                  [policies]=30 [train]=165 [train3d]=120)
# quick_limits: a --quick run's (FIG_QUICK=1) step 7 trains on the CPU.
quick_limits() { [[ ${FIG_QUICK:-0} != 1 ]] || limit[train3d]=300; }
declare -A title=(
  [tests]="1. Tests (./run-tests)"
  [sanitizer]="2. compute-sanitizer (./run-sanitizer test_cuda_slot_ring test_cuda_feeder)"
  [cuda-bench]="3. Host-to-device copies and normalize on the GPU (bench_h2d, bench_gpu_normalize)"
  [dataset]="4a. The heavy-tailed image folder"
  [node]="4b. conveyor-node vs the bare loop (bench_ceiling)"
  [policies]="5. latency_aware vs in_order at 85% of the node's rate"
  [train]="6. ResNet training fed six ways (./run-train)"
  [train3d]="7. UNet3D training from the MLPerf reference's Dataset (./run-train --model unet3d)")

# ---------------------------------------------------------------------------------------------
# The steps. Each runs in a process of its own (this script with --step NAME, under timeout),
# writes its Markdown into $parts/NAME.md (as it goes, where it has several runs, so that a
# step cut off by its limit still shows what it measured) and, unless it measured what it
# should, its verdicts (one a line) into $parts/NAME.status.

# remaining: seconds left to this step, less a margin for writing its section.
remaining() {
  local left=$((step_deadline - $(date +%s) - 5))
  echo $((left > 1 ? left : 1))
}
verdict() { echo "$*" >>"$parts/$current_step.status"; }  # each one a line
section() { cat >"$parts/$current_step.md"; }
# show VALUE: "n/a" for a JSON null.
show() { [[ $1 == None || $1 == null || -z $1 ]] && echo n/a || echo "$1"; }
pct() {
  if [[ $(show "$1") == n/a ]]; then echo n/a; else awk -v v="$1" 'BEGIN { printf "%.1f%%", 100 * v }'; fi
}
per() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f\n", a / b; else print "n/a" }'; }
# run_bundled RAW CMD...: CMD under the step's remaining time, its output into RAW; its exit code.
run_bundled() {
  local raw=$1
  shift
  timeout -k 3 "$(remaining)" "$@" >"$raw" 2>&1 </dev/null
}
# command_line SHOWN RC RAW: a section's first line: the command as shown, its exit code, and
# the last line of its output RAW.
command_line() {
  echo "Command: \`$1\` (exit $2$( (($2 == 124)) && echo ": cut off at the step's limit")); its last line: \`$(tail -n 1 "$3")\`"
}
# cut_off RC: whether the step's limit ended the command.
cut_off() { (($1 == 124 || $1 == 137)); }

step_tests() {
  local raw=$logs/run-tests.txt rc
  run_bundled "$raw" "$bundle/run-tests"
  rc=$?
  local failed
  failed=$(sed -n 's/^FAILED: //p' "$raw")
  {
    command_line "CONVEYOR_REQUIRE_GPU=${CONVEYOR_REQUIRE_GPU:-1} ./run-tests" "$rc" "$raw"
    echo
    echo "| program | result | tests | passed | skipped | failed |"
    echo "|---|---|---|---|---|---|"
    awk -v failed=" $failed " -v rc="$rc" '
      /^=== / { name = $2; names[++n] = name; next }
      name != "" && /^\[==========\] [0-9]+ tests? from .* ran/ { ran[name] = $2 }
      name != "" && /^\[  PASSED  \] [0-9]+ tests?/ { passed[name] = $4 }
      name != "" && /^\[  SKIPPED \] [0-9]+ tests?/ { skipped[name] = $4 }
      name != "" && /^\[  FAILED  \] [0-9]+ tests?/ { bad[name] = $4 }
      END {
        for (i = 1; i <= n; i++) {
          t = names[i]
          if (index(failed, " " t " ")) result = "**FAILED**"
          else if (i == n && rc != 0 && failed == "  ") result = "**cut off**"
          else if (skipped[t] + 0 > 0) result = "passed, with skips"
          else result = "passed"
          printf "| %s | %s | %s | %s | %s | %s |\n", t, result, (t in ran) ? ran[t] : "-",
            passed[t] + 0, skipped[t] + 0, bad[t] + 0
        }
      }' "$raw"
  } | section
  if cut_off "$rc"; then
    verdict "cut off at the step's limit (${limit[tests]} s)${failed:+; failed: $failed}"
  elif ((rc != 0)); then
    verdict "failed: ${failed:-exit $rc}"
  elif grep -q '^\[  SKIPPED \] [0-9]' "$raw"; then
    verdict "passed, with tests skipped (no usable GPU: CONVEYOR_REQUIRE_GPU=0)"
  fi
  return "$rc"
}

step_sanitizer() {
  local raw=$logs/run-sanitizer.txt rc tests=(test_cuda_slot_ring test_cuda_feeder)
  run_bundled "$raw" "$bundle/run-sanitizer" "${tests[@]}"
  rc=$?
  local reported
  reported=$(sed -n 's/^REPORTED: //p' "$raw")
  {
    command_line "./run-sanitizer ${tests[*]}" "$rc" "$raw"
    echo
    echo "| tool | test | result | summary line |"
    echo "|---|---|---|---|"
    awk -v reported=" $reported " '
      /^=== (memcheck|racecheck|synccheck) / { key = $2 ":" $3; keys[++n] = key; next }
      key != "" && /SUMMARY/ { line = $0; sub(/^=+ */, "", line); summary[key] = line }
      END {
        for (i = 1; i <= n; i++) {
          k = keys[i]; split(k, p, ":")
          result = index(reported, " " k " ") ? "**REPORTED**" : (k in summary) ? "clean" : "**no summary**"
          printf "| %s | %s | %s | %s |\n", p[1], p[2], result, (k in summary) ? summary[k] : "-"
        }
      }' "$raw"
  } | section
  if cut_off "$rc"; then
    verdict "cut off at the step's limit (${limit[sanitizer]} s)${reported:+; reported: $reported}"
  elif ((rc != 0)); then
    verdict "failed: ${reported:-$(tail -n 1 "$raw")}"
  fi
  return "$rc"
}

step_cuda-bench() {
  local quick_h2d=() quick_norm=() h2d norm rc1 rc2 f
  if [[ $FIG_QUICK == 1 ]]; then
    quick_h2d=(--batches 10 --repeats 1)
    quick_norm=(--batches 10 --repeats 1 --cpu-rounds 2)
  fi
  h2d=$(timeout -k 3 $(($(remaining) / 2)) "$bundle/run" bench_h2d "${quick_h2d[@]}" \
    2>"$logs/bench_h2d.err" </dev/null)
  rc1=$?
  echo "$h2d" >"$logs/bench_h2d.json"
  norm=$(timeout -k 3 "$(remaining)" "$bundle/run" bench_gpu_normalize "${quick_norm[@]}" \
    2>"$logs/bench_gpu_normalize.err" </dev/null)
  rc2=$?
  echo "$norm" >"$logs/bench_gpu_normalize.json"
  # table LINE FIELD...: a one-row table of the JSON line's fields, or why there is none.
  table() {
    local line=$1 rc=$2 err=$3 k row="|" head="|" rule="|"
    shift 3
    if ((rc != 0)) || [[ -z $line ]]; then
      echo "No result (exit $rc): \`$(tail -n 1 "$err")\`"
    elif [[ $line == *'"skipped"'* ]]; then
      echo "Skipped: $(json_field "$line" skipped)"
    else
      for k in "$@"; do
        head+=" $k |" rule+="---|" row+=" $(json_field "$line" "$k") |"
      done
      printf '%s\n%s\n%s\n' "$head" "$rule" "$row"
    fi
  }
  {
    echo "\`./run bench_h2d ${quick_h2d[*]}\` (batches of 256 x 3 x 224 x 224 uint8, 3 slots; the CUDA feeder's ring against plain pinned copies; target ratio >= 0.9):"
    echo
    table "$h2d" "$rc1" "$logs/bench_h2d.err" device batch_bytes plain_gb_s feeder_gb_s \
      feeder_writes_gb_s ratio ratio_with_writes
    echo
    echo "\`./run bench_gpu_normalize ${quick_norm[*]}\` (batches of 256 x 3 x 224 x 224: uint8 over PCIe and normalized on the GPU, against float32 normalized on the CPU):"
    echo
    table "$norm" "$rc2" "$logs/bench_gpu_normalize.err" gpu_f32_batches_s gpu_bf16_batches_s \
      cpu_f32_batches_s ratio_gpu_f32_vs_cpu pcie_mb_per_batch_gpu pcie_mb_per_batch_cpu \
      cpu_us_per_sample_normalize cpu_us_per_sample_to_uint8 cpu_cores_saved
    echo
    echo "Their lines:"
    echo
    echo '```'
    echo "$h2d"
    echo "$norm"
    echo '```'
  } | section
  # outcome NAME RC LINE: what went wrong with one of them, if anything.
  outcome() {
    if (($2 != 0)) || [[ -z $3 ]]; then
      echo "$1 failed (exit $2); "
    elif [[ $3 == *'"skipped"'* ]]; then
      echo "$1 skipped (no CUDA device); "
    fi
  }
  f="$(outcome bench_h2d "$rc1" "$h2d")$(outcome bench_gpu_normalize "$rc2" "$norm")"
  [[ -z $f ]] || verdict "${f%; }"
  [[ -z $f ]]
}

dataset=$DATA_DIR/heavy-${FIG_IMAGES:-3000}
rel() { echo "${1#"$bundle"/}"; }  # a path as seen from the bundle's root

step_dataset() {
  local start=$SECONDS made=1 files
  if [[ -d $dataset ]]; then
    made=0
  fi
  if ! ensure_dataset "$dataset" "$FIG_IMAGES" 0.10; then
    verdict "failed: bench_ceiling --generate (logs/dataset.log)"
    return 1
  fi
  files=$(find "$dataset" -type f | wc -l)
  {
    if ((made)); then
      echo "Made in $((SECONDS - start)) s by lib.sh's ensure_dataset:" \
        "\`tools/bench_ceiling --dataset $(rel "$dataset") --generate $FIG_IMAGES --large-fraction 0.10\`" \
        "($(nproc) threads)."
    else
      echo "Already there from an earlier run: $(rel "$dataset")."
    fi
    echo "$files JPEGs, 10% of them 1800-3200 px, the others 300-640 px; mean file" \
      "$(awk -v b="$(mean_file_bytes "$dataset")" 'BEGIN { printf "%.0f KB", b / 1000 }')."
  } | section
}

# node_cmd KEY=VALUE...: the command line of a node run on the dataset, as run_node makes it.
node_cmd() {
  local cmd
  cmd="tools/conveyor-node --topology config/default.toml --set dataset.path=$(rel "$dataset") --set dataset.format=folder$(printf -- ' --set %s' "$@")"
  echo "$cmd"
}
# gpu_decode_topology: config/default.toml with decode.on = "auto" (JPEGs shared with nvJPEG),
# written once into the work folder; prints its path.
gpu_decode_topology() {
  local path=$out/gpu-decode.toml
  [[ -s $path ]] || sed "$DECODE_AUTO_SED" "$bundle/config/default.toml" >"$path"
  echo "$path"
}
# stood_in LOG: whether the node's log says host feeders stood in for the CUDA devices asked for.
stood_in() { grep -q 'host feeders stand in' "$1"; }

step_node() {
  local tsv=$logs/node.tsv r kinds k json log note
  if [[ ! -d $dataset ]]; then
    verdict "failed: no dataset ($(rel "$dataset")): step 4a did not make it"
    return 1
  fi
  : >"$tsv"
  rm -f "$logs/node-rate"
  local common=(trainer.step_ms=0 pipeline.batch_size=64 trainer.epochs=2 batching.policy=in_order)
  for ((r = 1; r <= FIG_ROUNDS; r++)); do
    # Which runs first turns from round to round, so that no one always runs on a warmer machine.
    local all=(ceiling cuda host batches nvjpeg) turn=$(((r - 1) % 5))
    kinds=("${all[@]:turn}" "${all[@]:0:turn}")
    for k in "${kinds[@]}"; do
      if (($(remaining) < 5)); then
        verdict "cut short: no time left for round $r's $k run (the step's limit is ${limit[node]} s)"
        break 2
      fi
      log="$logs/node-r$r-$k.log"
      case $k in
        ceiling) json=$(run_ceiling "$dataset" 2 2>"$log") ;;
        cuda) json=$(run_node "$dataset" "$log" "${common[@]}" "gpus=[0]") ;;
        host) json=$(run_node "$dataset" "$log" "${common[@]}" gpus=1) ;;
        batches) json=$(run_node "$dataset" "$log" "${common[@]}" "gpus=[0]" \
          pipeline.window_samples=$((3 * 64))) ;;
        nvjpeg) json=$(TOPOLOGY=$(gpu_decode_topology) run_node "$dataset" "$log" \
          "${common[@]}" "gpus=[0]") ;;
      esac || {
        log "round $r $k failed: $(tail -n 1 "$log")"
        printf '%s\t%s\tfailed\t%s\n' "$r" "$k" "$(tail -n 1 "$log" | tr '\t|`' '   ' | cut -c1-150)" >>"$tsv"
        continue
      }
      note=""
      [[ $k == cuda || $k == batches || $k == nvjpeg ]] && stood_in "$log" &&
        note="host feeders stood in: no usable CUDA device"
      [[ $k == nvjpeg ]] && note+="${note:+; }$(gpu_decode_note "$log")"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$k" "$(json_field "$json" samples_per_s)" \
        "$(json_field "$json" cpu_s)" "$(json_field "$json" samples)" \
        "$(json_field "$json" wall_s)" "$(json_field "$json" peak_rss_mb)" "$note" >>"$tsv"
      log "round $r $k: $json"
      node_section
    done
  done
  node_section
  if grep -q $'\tfailed\t' "$tsv"; then
    verdict "failed: $(awk -F'\t' '$3 == "failed" { printf "round %s %s; ", $1, $2 }' "$tsv")see logs/node-r*.log"
    return 1
  fi
  if grep -q 'stood in' "$tsv"; then
    verdict "the CUDA runs had no GPU: host feeders stood in for gpus = [0]"
    return 1
  fi
}

# node_rate: step 5's demand, from the runs so far: the CUDA feeder's median rate where it ran
# on the GPU, else the host feeder's.
node_rate() {
  local cu h
  cu=$(kind_median cuda) h=$(kind_median host)
  if [[ -n $cu ]] && ! grep -q $'\tcuda\t.*stood in' "$logs/node.tsv"; then
    echo "$cu [0] the CUDA feeder (gpus = [0])" >"$logs/node-rate"
  elif [[ -n $h ]]; then
    echo "$h 1 a host feeder (gpus = 1; the CUDA feeder did not run on a GPU in step 4b)" >"$logs/node-rate"
  fi
}

# kind_median KIND: the median samples/s of KIND's runs in node.tsv ("" if none).
kind_median() {
  local values
  mapfile -t values < <(awk -F'\t' -v k="$1" '$2 == k && $3 != "failed" { print $3 }' "$logs/node.tsv")
  ((${#values[@]})) && median "${values[@]}"
}

# node_section: step 4b's section (and step 5's demand) from node.tsv as it stands.
node_section() {
  local tsv=$logs/node.tsv r k rate cpu samples wall rss note c cu h b nv
  node_rate
  {
    echo "- dataset: $(rel "$dataset") ($FIG_IMAGES JPEGs, 10% of them 1800-3200 px), 2 epochs;" \
      "$(nproc) cores, preprocessors auto; rounds: $FIG_ROUNDS, the order turning each round"
    echo "- ceiling: \`tools/bench_ceiling --dataset $(rel "$dataset") --format folder --epochs 2\` ($(nproc) threads)"
    echo "- node, CUDA feeder: \`$(node_cmd trainer.step_ms=0 pipeline.batch_size=64 trainer.epochs=2 batching.policy=in_order "gpus=[0]")\`"
    echo "- node, host feeder: the same with \`--set gpus=1\`"
    echo "- batches: the CUDA feeder's run with the window of batches alone" \
      "(\`--set pipeline.window_samples=192\`, the default before the pool's share joined it)"
    echo "- nvjpeg: the CUDA feeder's run with decode.on = \"auto\" (\`--topology $(rel "$out")/gpu-decode.toml\`):" \
      "JPEGs shared between the CPU and nvJPEG by measured rates (issue 34 item 4: target > 1.5x the CPU-only rate)"
    echo
    echo "| round | run | samples/s | / ceiling of the round | cpu_s | samples/CPU-s | wall_s | peak RSS (MB) | note |"
    echo "|---|---|---|---|---|---|---|---|---|"
    while IFS=$'\t' read -r r k rate cpu samples wall rss note; do
      c=$(awk -F'\t' -v r="$r" '$1 == r && $2 == "ceiling" && $3 != "failed" { print $3 }' "$tsv")
      if [[ $rate == failed ]]; then  # the log's last line in place of cpu_s
        echo "| $r | $k | **failed** | | | | | | $cpu |"
      else
        echo "| $r | $k | $rate | $([[ $k != ceiling && -n $c ]] && ratio "$rate" "$c") | $cpu | $(per "$samples" "$cpu") | $wall | $rss | $note |"
      fi
    done <"$tsv"
    c=$(kind_median ceiling) cu=$(kind_median cuda) h=$(kind_median host) b=$(kind_median batches)
    nv=$(kind_median nvjpeg)
    echo
    echo "Medians over the rounds: ceiling ${c:-n/a} samples/s; node with the CUDA feeder" \
      "${cu:-n/a} (**$([[ -n $c && -n $cu ]] && ratio "$cu" "$c" || echo n/a)** of the ceiling)," \
      "with the host feeder ${h:-n/a} (**$([[ -n $c && -n $h ]] && ratio "$h" "$c" || echo n/a)**)," \
      "with the window of batches alone ${b:-n/a} (**$([[ -n $c && -n $b ]] && ratio "$b" "$c" || echo n/a)**). Target >= 0.95." \
      "With decode.on = \"auto\": ${nv:-n/a} samples/s, **$([[ -n $cu && -n $nv ]] && ratio "$nv" "$cu" || echo n/a)x** the CUDA feeder's CPU-only run (target > 1.5)."
  } | section
}

step_policies() {
  local tsv=$logs/policies.tsv rate gpus feeder step_ms r p order json log
  if [[ ! -d $dataset ]]; then
    verdict "failed: no dataset ($(rel "$dataset")): step 4a did not make it"
    return 1
  fi
  if [[ -s $logs/node-rate ]]; then
    read -r rate gpus feeder <"$logs/node-rate"
    feeder="$feeder, its rate the median of step 4b's in_order step-0 runs"
  else
    # No rate from step 4b: measured here, as bench/policy_map.sh measures its capacity.
    log "no node rate from step 4b: measuring it"
    json=$(run_node "$dataset" "$logs/policies-capacity.log" trainer.step_ms=0 \
      pipeline.batch_size=64 trainer.epochs=2 batching.policy=in_order "gpus=[0]") || {
      verdict "failed: no node rate from step 4b, and the capacity run failed (logs/policies-capacity.log)"
      return 1
    }
    rate=$(json_field "$json" samples_per_s) gpus="[0]" feeder="the CUDA feeder (gpus = [0])"
    if stood_in "$logs/policies-capacity.log"; then
      gpus=1 feeder="a host feeder (no usable CUDA device)"
    fi
    feeder="$feeder, its rate from one in_order step-0 run here (step 4b gave none)"
  fi
  step_ms=$(awk -v c="$rate" 'BEGIN { printf "%.3f\n", 1000 * 64 / (0.85 * c) }')
  : >"$tsv"
  for ((r = 1; r <= FIG_ROUNDS; r++)); do
    if ((r % 2)); then order=(in_order latency_aware); else order=(latency_aware in_order); fi
    for p in "${order[@]}"; do
      if (($(remaining) < 5)); then
        verdict "cut short: no time left for round $r's $p run (the step's limit is ${limit[policies]} s)"
        break 2
      fi
      log="$logs/policies-r$r-$p.log"
      json=$(run_node "$dataset" "$log" "trainer.step_ms=$step_ms" pipeline.batch_size=64 \
        trainer.epochs=2 "batching.policy=$p" "gpus=$gpus") || {
        printf '%s\t%s\tfailed\t%s\n' "$r" "$p" "$(tail -n 1 "$log" | tr '\t|`' '   ' | cut -c1-150)" >>"$tsv"
        continue
      }
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$p" "$(json_field "$json" samples_per_s)" \
        "$(json_field "$json" stall_fraction)" "$(json_field "$json" handoffs)" \
        "$(($(json_field "$json" lost) + $(json_field "$json" duplicates)))" \
        "$(json_field "$json" cpu_s)" >>"$tsv"
      log "round $r $p: $json"
      policies_section "$rate" "$step_ms" "$gpus" "$feeder"
    done
  done
  policies_section "$rate" "$step_ms" "$gpus" "$feeder"
  if grep -q $'\tfailed' "$tsv"; then
    verdict "failed: $(awk -F'\t' '$3 == "failed" { printf "round %s %s; ", $1, $2 }' "$tsv")see logs/policies-r*.log"
    return 1
  fi
  if [[ $gpus == 1 ]]; then
    verdict "ran on a host feeder: no CUDA feeder on a GPU"
    return 1
  fi
}

# policies_section RATE STEP_MS GPUS FEEDER: step 5's section from policies.tsv as it stands.
policies_section() {
  local tsv=$logs/policies.tsv r p rate stall handoffs lostdup cpu io la sio sla
  {
    echo "- demand: 85% of $1 samples/s, the node's rate with $4: trainer.step_ms = 64 x 1000 / (0.85 x $1) = $2"
    echo "- command: \`$(node_cmd "trainer.step_ms=$2" pipeline.batch_size=64 trainer.epochs=2 batching.policy=POLICY "gpus=$3")\`, the policies alternating first; rounds: $FIG_ROUNDS"
    echo
    echo "| round | policy | samples/s | stall fraction | handoffs | lost + duplicates | cpu_s |"
    echo "|---|---|---|---|---|---|---|"
    while IFS=$'\t' read -r r p rate stall handoffs lostdup cpu; do
      if [[ $rate == failed ]]; then  # the log's last line in place of the stall
        echo "| $r | $p | **failed**: $stall | | | | |"
      else
        echo "| $r | $p | $rate | $(pct "$stall") | $handoffs | $lostdup | $cpu |"
      fi
    done <"$tsv"
    io=$(policy_median in_order 3) la=$(policy_median latency_aware 3)
    sio=$(policy_median in_order 4) sla=$(policy_median latency_aware 4)
    echo
    if [[ -n $io && -n $la ]]; then
      echo "Medians: in_order ${io} samples/s, stall $(pct "$sio"); latency_aware ${la}" \
        "samples/s, stall $(pct "$sla"). latency_aware / in_order samples/s:" \
        "**$(ratio "$la" "$io")**; stall difference (latency_aware - in_order):" \
        "**$(awk -v a="$sla" -v b="$sio" 'BEGIN { printf "%+.1f pt", 100 * (a - b) }')**."
    fi
  } | section
}

# policy_median POLICY COLUMN: the median of a column of policies.tsv over the policy's runs.
policy_median() {
  local values
  mapfile -t values < <(awk -F'\t' -v p="$1" -v c="$2" \
    '$2 == p && $3 != "failed" && $c != "None" { print $c }' "$logs/policies.tsv")
  ((${#values[@]})) && median "${values[@]}"
}

step_train() {
  local args
  if [[ $FIG_QUICK == 1 ]]; then
    args=(--device cpu --model resnet18 --batch 8 --steps 3 --warmup 1 --workers 2)
  else
    args=(--steps 50 --warmup 10 --workers "$(nproc)")
  fi
  run_train "${args[@]}" --images "$FIG_IMAGES"
}

step_train3d() {
  local args
  if [[ $FIG_QUICK == 1 ]]; then
    args=(--device cpu --batch 1 --steps 1 --warmup 1 --workers 2 --cases 6 --amp off)
  else
    args=(--steps 150 --warmup 10 --workers "$(nproc)" --cases 40)
  fi
  run_train --model unet3d "${args[@]}"
}

# run_train ARGS...: ./run-train ARGS into $out/STEP (STEP: this step's name), its section and
# verdict.
run_train() {
  local args=("$@" --out "$out/$current_step") rc md=$out/$current_step/gpu_train.md
  local raw=$logs/run-$current_step.txt
  rm -f "$md" "$out/$current_step/runs.jsonl"
  timeout -k 3 "$(remaining)" "$bundle/run-train" "${args[@]}" >"$raw" 2>&1 </dev/null
  rc=$?
  {
    echo "Command: \`./run-train ${args[*]/#$out/\$OUT}\` (exit $rc$( ((rc == 124)) && echo ": cut off at the step's limit")); \$OUT is --out. Its JSON lines: $current_step/runs.jsonl; the node's logs: $current_step/node-*.log."
    echo
    if [[ -s $md ]]; then
      sed '1,2d; s/^# /### /' "$md"
    elif [[ -s $out/$current_step/runs.jsonl ]]; then
      echo "The feeds that finished before it failed:"
      echo
      "$PYTHON" "$here/gpu_train_table.py" "$out/$current_step/runs.jsonl"
    else
      echo "No feed finished."
    fi
    if ((rc != 0)); then
      echo
      echo "logs/run-$current_step.txt ends:"
      echo
      echo '```'
      grep -v '^\s*$' "$raw" | tail -n 8 | cut -c1-300
      echo '```'
    fi
  } | section
  if ((rc == 124 || rc == 137)); then
    verdict "cut off at the step's limit (${limit[$current_step]} s)"
  elif ((rc != 0)); then
    verdict "failed (exit $rc): $(grep -v '^\s*$' "$raw" | tail -n 1 | cut -c1-200)"
  fi
  return "$rc"
}

if [[ ${1:-} == --step ]]; then
  current_step=$2
  out=$FIG_OUT logs=$FIG_OUT/logs parts=$FIG_OUT/parts
  quick_limits
  step_deadline=$(($(date +%s) + limit[$current_step]))
  "step_$current_step"
  exit
fi

# ---------------------------------------------------------------------------------------------
# The run: options, the machine, each step under its limit, gpu.md rewritten after each.

out=$bundle/work/gpu-figures
images=3000 rounds=3 quick=0 only=""
command_line="./run-figures $*"
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_figures.sh: unknown argument $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
if [[ $quick == 1 ]]; then
  [[ $command_line == *--images* ]] || images=256
  [[ $command_line == *--rounds* ]] || rounds=1
fi
# Steps 4b and 5 need the image folder: step 4a goes with them (at once when it is there).
[[ " $only " =~ \ (node|policies)\  ]] && only+=" dataset"
steps=()
for s in "${all_steps[@]}"; do
  if [[ -z $only || " $only " == *" $s "* ]]; then
    steps+=("$s")
  fi
done
for s in $only; do
  [[ -n ${limit[$s]:-} ]] || { echo "gpu_figures.sh: no step $s (${all_steps[*]})" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
logs=$out/logs parts=$out/parts
# A run of every step starts afresh; --only keeps the other steps' results of the last run in
# this --out (gpu.md shows them with a note) and replaces those it reruns.
kept=""
if [[ -z $only ]]; then
  rm -rf "$parts"
fi
mkdir -p "$logs" "$parts"
touch "$parts/summary.tsv"
for s in "${steps[@]}"; do
  rm -f "$parts/$s".*
  awk -F'\t' -v s="$s" '$1 != s' "$parts/summary.tsv" >"$parts/summary.tmp"
  mv "$parts/summary.tmp" "$parts/summary.tsv"
done
kept=$(cut -f1 "$parts/summary.tsv" | paste -sd' ')
export FIG_OUT=$out FIG_IMAGES=$images FIG_ROUNDS=$rounds FIG_QUICK=$quick
quick_limits
started=$(date +%s)

# header: the machine and the bundle.
{
  echo "# GPU figures (bench/gpu_figures.sh)"
  echo
  if [[ $quick == 1 ]]; then
    echo "**--quick: a dry run of the script, not a measurement.** Every step is shrunk (256 images, 1 round, short CUDA benchmarks, training on the CPU); no figure here stands for anything."
    echo
  fi
  echo "- GPU (nvidia-smi -L):"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L 2>&1 | sed 's/^/  - /'
    echo "- driver, memory: $(nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"
  else
    echo "  - nvidia-smi not found: no NVIDIA driver here"
  fi
  echo "- CPU: $(nproc) cores ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(uname -sr); load average at the start $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- bundle: $(sed -n '1,3p' "$bundle/README.txt" | tr '\n' ' ' | sed 's/ *$//')"
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); command: \`CONVEYOR_REQUIRE_GPU=${CONVEYOR_REQUIRE_GPU:-1} $command_line\`; python: $PYTHON ($("$PYTHON" --version 2>&1))"
  if [[ -n $kept ]]; then
    echo "- kept from an earlier run into this --out (not rerun now): $kept"
  fi
} >"$parts/header.md"

# assemble: gpu.md from the header, the steps run so far and their sections.
assemble() {
  local s status secs lim row
  {
    cat "$parts/header.md"
    echo "- elapsed: $(($(date +%s) - started)) s$([[ -s $parts/build-python ]] && echo "; $(<"$parts/build-python")")"
    echo
    echo "| step | status | seconds (limit) |"
    echo "|---|---|---|"
    for s in "${all_steps[@]}"; do
      row=$(awk -F'\t' -v s="$s" '$1 == s' "$parts/summary.tsv")
      [[ -n $row ]] || continue
      IFS=$'\t' read -r s status secs lim <<<"$row"
      echo "| ${title[$s]} | $status | $secs ($lim) |"
    done
    for s in "${all_steps[@]}"; do
      row=$(awk -F'\t' -v s="$s" '$1 == s' "$parts/summary.tsv")
      [[ -n $row ]] || continue
      IFS=$'\t' read -r s status secs lim <<<"$row"
      echo
      echo "## ${title[$s]}"
      echo
      [[ $status == ok ]] || { echo "**$status**"; echo; }
      if [[ -s $parts/$s.md ]]; then
        cat "$parts/$s.md"
      else
        echo "No figures."
      fi
      # The log's end where the step broke down (not where it only ran without a GPU).
      if [[ ($status =~ ^(failed|timed out|cut ) || ! -s $parts/$s.md) && -s $logs/$s.log ]]; then
        echo
        echo "logs/$s.log ends:"
        echo
        echo '```'
        tail -n 12 "$logs/$s.log" | cut -c1-300
        echo '```'
      fi
    done
  } >"$out/gpu.md"
}

# The Python module for steps 6 and 7, compiled meanwhile where it is missing (as run-train
# would).
build_pid=""
if [[ " ${steps[*]} " =~ \ train(3d)?\  ]]; then
  suffix=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
  if [[ -n $suffix && ! -f $bundle/python/conveyor/_native$suffix ]]; then
    log "compiling the Python module in the background (logs/build-python.log)"
    build_start=$(date +%s)
    PYTHON=$PYTHON timeout -k 5 150 "$bundle/build-python" >"$logs/build-python.log" 2>&1 </dev/null &
    build_pid=$!
  fi
fi
# wait_for_build: before the steps that measure the CPU (or need the module).
wait_for_build() {
  [[ -n $build_pid ]] || return 0
  local rc
  wait "$build_pid"
  rc=$?
  build_pid=""
  if ((rc == 0)); then
    echo "./build-python (in the background): $(($(date +%s) - build_start)) s" >"$parts/build-python"
  else
    echo "./build-python (in the background) **failed** (exit $rc; logs/build-python.log): steps 6 and 7 try again" >"$parts/build-python"
  fi
}

failures=0
for s in "${steps[@]}"; do
  case $s in tests | sanitizer) ;; *) wait_for_build ;; esac
  log "step ${title[$s]} (at most ${limit[$s]} s)"
  t0=$(date +%s)
  timeout -k 5 "${limit[$s]}" "$self" --step "$s" >"$logs/$s.log" 2>&1 </dev/null
  rc=$?
  secs=$(($(date +%s) - t0))
  # The step's verdict (a program it ran cut off by its own timeout, within the limit, says
  # so there); else the limit's timeout ended the step itself.
  if [[ -s $parts/$s.status ]]; then
    status=$(awk 'NR > 1 { printf "; " } { printf "%s", $0 }' "$parts/$s.status")
    ((rc == 124 || rc == 137)) && [[ $status != cut* ]] && status="timed out after ${limit[$s]} s; $status"
  elif ((rc == 124 || rc == 137)); then
    status="timed out after ${limit[$s]} s"
  elif ((rc != 0)); then
    status="failed (exit $rc)"
  else
    status=ok
  fi
  # Not ok also where nothing failed but nothing ran on a GPU (skipped, host feeders).
  [[ $status == ok ]] || ((failures++))
  printf '%s\t%s\t%s\t%s\n' "$s" "$(echo "$status" | tr '\t|' '  ')" "$secs" "${limit[$s]}" >>"$parts/summary.tsv"
  log "  $status ($secs s)"
  assemble
done
wait_for_build
assemble
log "wrote $out/gpu.md ($failures of ${#steps[@]} steps not ok, $(($(date +%s) - started)) s)"
((failures == 0))
