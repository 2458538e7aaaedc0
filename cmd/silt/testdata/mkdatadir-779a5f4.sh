#!/bin/bash
# Makes the data directory of cmd/silt/testdata/datadir-779a5f4.tar.gz with
# the release built from commit 779a5f4.
set -euo pipefail
SILT=${SILT:?the silt binary built from commit 779a5f4}
W=$(mktemp -d)
cd "$W"
mkdir -p fixture/tier2
start() {
  "$SILT" serve --core.dir fixture/data --core.segment_file_bytes 4096 \
    --tiering.fs.dir "$W/fixture/tier2" --tiering.max_chunk_bytes 2048 --tiering.max_lag "$1" \
    --api.listen 127.0.0.1:17070 --s3.listen 127.0.0.1:19000 --nfs.listen 127.0.0.1:30490 --webhdfs.listen 127.0.0.1:19870 \
    >serve.log 2>&1 &
  PID=$!
  for _ in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:17070/readyz && break; sleep 0.1; done
}
api() { curl -sS -H "Authorization: Bearer $(cat fixture/data/root.token)" "$@"; }
post() { # stream segment writer seq body...
  local st=$1 seg=$2 w=$3 seq=$4; shift 4
  printf '{"e":"%s"}\n' "$@" | api -X POST -H "Content-Type: application/x-ndjson" -H "Silt-Writer-Id: $w" -H "Silt-Seq: $seq" \
    "http://127.0.0.1:17070/v1/tenants/acme/streams/$st/events?segment=$seg" --data-binary @- ; echo
}
start 1s
export SILT_SERVER=http://127.0.0.1:17070 SILT_TOKEN_FILE=fixture/data/root.token
"$SILT" tenant create acme
"$SILT" stream create acme/clicks --segments 2
"$SILT" stream create acme/logs --segments 3
"$SILT" stream create acme/blobs --segments 1 --encoding framed
"$SILT" stream create acme/empty --segments 2
# Tiered: 40 batches per segment, 5 events of ~100 bytes each; files roll at 4 KiB.
for seg in 0 1; do for i in $(seq 1 40); do
  post clicks $seg "w-clicks-$seg" $i $(for e in 1 2 3 4 5; do printf 'clicks-%s-%03d-%d-%0100d ' $seg $i $e 0; done) >>posts.log
done; done
for seg in 0 1 2; do for i in $(seq 1 10); do
  post logs $seg "w-logs" $i "logs-$seg-$i-a" "logs-$seg-$i-b" >>posts.log
done; done
sleep 5
kill -INT $PID; wait $PID || true
# Tier 1 only: a long lag keeps these out of tier 2.
start 1h
for seg in 0 1; do for i in $(seq 41 45); do
  post clicks $seg "w-clicks-$seg" $i "clicks-$seg-$i-tail" >>posts.log
done; done
post logs 2 "w-logs" 11 "logs-2-11-tail" >>posts.log
kill -INT $PID; wait $PID || true
rm -f fixture/data/*.lock fixture/data/silt.pid 2>/dev/null || true
tar -C fixture -czf "$W/datadir.tar.gz" data tier2
echo "$W/datadir.tar.gz"
