#!/usr/bin/env bash
# The node's knobs on the GPU machine, against the bare loop, in one short run (issue 34 items 2
# and 4): what closes the gap to bench_ceiling on 16 cores, and how decode.on = "auto" shares
# JPEGs with nvJPEG by backend and lanes. Runs inside the GPU bundle (scripts/gpu-bundle), from
# its root: bench/gpu_knobs.sh [ROUNDS] [EPOCHS] (default 2 rounds of 4 epochs). The heavy-tailed
# image folder of ./run-figures (work/data/heavy-3000, made here if missing). The variants, all
# conveyor-node on config/default.toml (in_order, batch 64, step 0, the CUDA feeder) but the
# ceiling, and all with 1 reader and 2 samples per preprocessor (the defaults before "auto")
# unless named:
#   ceiling        bench_ceiling, every core
#   cpu            the node, decode on the CPU
#   cpu-pwl4       pipeline.per_worker_limit = 4
#   cpu-pwl4-r2    per_worker_limit 4 and pipeline.readers = 2
#   cpu-win768     pipeline.window_samples = 768
#   cpu-auto       readers and per_worker_limit "auto" (the defaults: 2 and 4 on 16 cores)
#   gpu-hybrid-L8  decode.on = "auto", gpu_lanes = 8, CONVEYOR_NVJPEG_BACKENDS=GPU_HYBRID,HYBRID
#                  (the JPEG engines never used for crops: the decoder before they cut regions)
#   gpu-L8, gpu-L16, gpu-L8-pwl4
#                  decode.on = "auto" with every backend (the engines decode whole images and
#                  the crop's region is cut on the GPU), 8 or 16 lanes, per_worker_limit 2 or 4
#   gpu-auto       decode.on = "auto" and every default (8 lanes, readers and per_worker_limit
#                  "auto")
# One line per run (samples/s, and how the JPEGs were shared), then the medians and each
# variant over the ceiling's median. No timing is asserted: these are figures.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
epochs=${2:-4}
data=work/data/heavy-3000
if [[ ! -d $data ]]; then
  rm -rf "$data.partial"
  ./run bench_ceiling --dataset "$data.partial" --generate 3000 --large-fraction 0.10 >/dev/null &&
    mv "$data.partial" "$data"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# decode_topology LANES: config/default.toml with decode.on = "auto" and gpu_lanes = LANES.
decode_topology() {
  local path=$work/decode-$1.toml
  sed "s/^op = \"decode\"\$/op = \"decode\"\\non = \"auto\"\\ngpu_lanes = $1/" \
    config/default.toml >"$path"
  echo "$path"
}
common=(--set "dataset.path=$data" --set dataset.format=folder --set trainer.step_ms=0
        --set pipeline.batch_size=64 --set "trainer.epochs=$epochs" --set batching.policy=in_order
        --set "gpus=[0]")
old=(--set pipeline.readers=1 --set pipeline.per_worker_limit=2)  # before "auto"
# run_variant NAME: one run; prints "NAME samples_per_s share".
run_variant() {
  local name=$1 log=$work/$1.log topology=config/default.toml sets=("${old[@]}") env=()
  case $name in
    ceiling)
      ./run bench_ceiling --dataset "$data" --format folder --epochs "$epochs" >"$log" 2>&1 ;;
    cpu) ;;
    cpu-pwl4) sets+=(--set pipeline.per_worker_limit=4) ;;
    cpu-pwl4-r2) sets+=(--set pipeline.per_worker_limit=4 --set pipeline.readers=2) ;;
    cpu-win768) sets+=(--set pipeline.window_samples=768) ;;
    cpu-auto) sets=() ;;
    gpu-hybrid-L8) topology=$(decode_topology 8); env=(CONVEYOR_NVJPEG_BACKENDS=GPU_HYBRID,HYBRID) ;;
    gpu-L8) topology=$(decode_topology 8) ;;
    gpu-L16) topology=$(decode_topology 16) ;;
    gpu-L8-pwl4) topology=$(decode_topology 8); sets+=(--set pipeline.per_worker_limit=4) ;;
    gpu-auto) topology=$(decode_topology 8); sets=() ;;
  esac
  if [[ $name != ceiling ]]; then
    env "${env[@]}" ./run conveyor-node --topology "$topology" "${common[@]}" "${sets[@]}" \
      >"$log" 2>&1
  fi
  local rate share
  rate=$(grep -o '"samples_per_s":[0-9.]*' "$log" | tail -n 1 | cut -d: -f2)
  share=$(grep -o 'decode: [0-9]* JPEGs on nvJPEG.*' "$log" | tail -n 1 |
          sed 's/ on nvJPEG [^;]*;/;/' | cut -c1-110)
  [[ -n $rate ]] || share="failed: $(tail -n 1 "$log" | cut -c1-150)"
  echo "$name ${rate:-0} ${share}"
}
variants=(ceiling cpu cpu-pwl4 cpu-pwl4-r2 cpu-win768 cpu-auto gpu-hybrid-L8 gpu-L8 gpu-L16
          gpu-L8-pwl4 gpu-auto)
results=$work/results
for ((r = 1; r <= rounds; ++r)); do
  n=${#variants[@]}
  for ((i = 0; i < n; ++i)); do  # the order turns each round
    line=$(run_variant "${variants[$(((i + r - 1) % n))]}")
    echo "round $r $line"
    echo "$line" >>"$results"
  done
done
echo "medians over $rounds rounds, $epochs epochs, $(nproc) cores:"
awk '{rates[$1] = rates[$1] " " $2} END {for (v in rates) print v, rates[v]}' "$results" |
  while read -r name values; do
    median=$(printf '%s\n' $values | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}')
    echo "$name $median"
  done | sort >"$work/medians"
ceiling=$(awk '$1 == "ceiling" {print $2}' "$work/medians")
cpu=$(awk '$1 == "cpu" {print $2}' "$work/medians")
awk -v c="$ceiling" -v p="$cpu" '{printf "%-14s %9.1f samples/s  %.3f of the ceiling  %.3fx cpu\n", $1, $2, $2 / c, $2 / p}' "$work/medians"
