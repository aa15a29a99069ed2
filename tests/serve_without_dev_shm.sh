#!/usr/bin/env bash
# Serving does not depend on /dev/shm (Docker caps it at 64 MB: PyTorch's "Bus error"): a node
# serves 2 epochs of 224x224 float32 batches (19 MB slots) to a client inside a mount namespace
# whose /dev/shm is a 64 KiB tmpfs. Skipped (77) where a mount namespace cannot be made.
# usage: serve_without_dev_shm.sh NODE PACK TRAINER TOPOLOGY
set -euo pipefail
node=$1 pack=$2 trainer=$3 topology=$4
work=$(mktemp -d /tmp/conveyor-noshm.XXXXXX)
trap 'rm -rf "$work"' EXIT
if ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: no mount namespace here (unshare -m needs privileges)"
  exit 77
fi
"$pack" --synthetic 40 --images "$work/images" --out "$work/shards" >/dev/null 2>&1
unshare -m --propagation private bash -c '
  set -euo pipefail
  mount -t tmpfs -o size=64k tmpfs /dev/shm
  "$1" --topology "$4" --set dataset.path="$5/shards" --set serve.socket="$5/n.sock" \
    --set pipeline.batch_size=32 --set trainer.epochs=2 --set monitor.interval_ms=10000 \
    >"$5/node.json" 2>"$5/node.err" &
  node=$!
  "$3" --attach "$5/n.sock" 0 0 >"$5/client.out"
  wait $node
  df -k /dev/shm | tail -1 >"$5/shm.txt"
' _ "$node" "$pack" "$trainer" "$topology" "$work"
cat "$work/client.out"
grep -q '"complete":true' "$work/node.json" || { cat "$work/node.json" "$work/node.err"; exit 1; }
grep -q 'rank 0 job 0: 80 samples' "$work/client.out"
echo "/dev/shm inside: $(cat "$work/shm.txt")"
