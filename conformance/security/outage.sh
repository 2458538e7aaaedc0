# A tier-2 outage on a small disk heals by itself: tier 1 on a 48 MiB tmpfs
# (smaller than core.segment_file_bytes, so each segment's one file must be
# rolled to be freed), tier 2 in moto_server, which is stopped. Producers
# with writer ids append until they get 503 + Retry-After, before any
# ENOSPC; /readyz says appends are refused. A restart on the then full
# disk exits at once saying what to do (disk.sh checks that with tier 2
# up; here tier 2 is down and tier 1 holds untiered events). Then moto
# comes back, and with no operator action silt drains tier 1, turns ready
# and takes appends again; every acknowledged event reads back exactly
# once through the native API and the WebHDFS head.
need_pip moto_server 'moto[server]' || { fail "outage: moto_server (PyPI moto[server]) is not available"; return; }
need_pip aws awscli || { fail "outage: aws CLI (PyPI awscli) is not available"; return; }
OUT=$(mktemp -d /tmp/silt-outage.XXXXXX)
mkdir -p -m 0700 "$OUT/data"
if ! mount -t tmpfs -o size=48m,mode=0700 silt-outage "$OUT/data"; then
	fail "outage: mount a 48 MiB tmpfs for tier 1 (the suite runs as root)"
	rm -rf "$OUT"
	return
fi
read -r MOTO_PORT API_PORT S3_PORT NFS_PORT HDFS_PORT <<<"$(free_ports 5)"
MOTO="http://127.0.0.1:$MOTO_PORT"
API="http://127.0.0.1:$API_PORT"
HDFS="http://127.0.0.1:$HDFS_PORT"
MOTO_AWS=(env AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
	AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null aws --endpoint-url "$MOTO")
MOTO_PID=
# start_moto: moto keeps its buckets in memory, so a restarted one is
# empty; the bucket is made again, as a real S3 would still have it.
start_moto() {
	moto_server -H 127.0.0.1 -p "$MOTO_PORT" >>"$OUT/moto.log" 2>&1 &
	MOTO_PID=$!
	for _ in $(seq 1 100); do
		curl -fsS "$MOTO/" >/dev/null 2>&1 && break
		sleep 0.1
	done
	"${MOTO_AWS[@]}" s3 mb s3://lake >/dev/null
}
stop_moto() {
	if [ -n "${MOTO_PID:-}" ]; then
		kill "$MOTO_PID" 2>/dev/null
		wait "$MOTO_PID" 2>/dev/null
		MOTO_PID=
	fi
}
# stop_producers: each ends after its batch in flight is acknowledged (or
# at once, with KILL set, when the run is cut short).
stop_producers() {
	touch "$OUT/stop"
	for p in ${PRODUCERS:-}; do
		if [ -z "${KILL:-}" ]; then
			for _ in $(seq 1 200); do
				kill -0 "$p" 2>/dev/null || break
				sleep 0.1
			done
		fi
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	PRODUCERS=
}
stop_outage() {
	KILL=1 stop_producers
	if [ -n "${SILT_PID:-}" ]; then kill "$SILT_PID" 2>/dev/null; wait "$SILT_PID" 2>/dev/null; SILT_PID=; fi
	stop_moto
	umount "$OUT/data" 2>/dev/null
	rm -rf "$OUT"
}
trap 'stop_outage; on_exit' EXIT
# Tier 1's settings are the defaults; max_lag keeps the run short.
OFLAGS=(--core.dir "$OUT/data" --api.listen "127.0.0.1:$API_PORT" --s3.listen "127.0.0.1:$S3_PORT"
	--nfs.listen "127.0.0.1:$NFS_PORT" --webhdfs.listen "127.0.0.1:$HDFS_PORT" --kafka.listen 127.0.0.1:0
	--tiering.backend s3 --tiering.s3.endpoint "$MOTO" --tiering.s3.bucket lake --tiering.s3.path_style
	--tiering.s3.access_key_id test --tiering.s3.secret_access_key test
	--tiering.max_lag 1s --tiering.interval 100ms)
# serve_bg: start silt and wait until it answers /healthz (not /readyz,
# which refuses while appends are refused).
serve_bg() {
	"$SILT_BIN" serve "${OFLAGS[@]}" >>"$OUT/silt.log" 2>&1 &
	SILT_PID=$!
	for _ in $(seq 1 100); do
		curl -fsS "$API/healthz" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "outage: silt serve did not start; its log:"
	tail -20 "$OUT/silt.log" | sed 's/^/       /'
	return 1
}
start_moto
serve_bg || { stop_outage; trap on_exit EXIT; return; }
SILT_TOKEN=$(cat "$OUT/data/root.token")
export SILT_SERVER=$API SILT_TOKEN
"$SILT_BIN" tenant create acme >/dev/null
"$SILT_BIN" stream create acme/s --segments 2 >/dev/null
stop_moto

# producer N: writer w<N> appends batches of 256 events of 1 KB to segment
# N, each retried with its sequence number until acknowledged (whatever
# the answer: 503, or no server at all), until $OUT/stop exists. It logs
# every answer (code, Retry-After) and each acknowledged batch.
producer() {
	local n=$1 b=0 code
	while [ ! -e "$OUT/stop" ]; do
		b=$((b + 1))
		awk -v n="$n" -v b="$b" 'BEGIN { pad = sprintf("%0990d", 0); for (i = 0; i < 256; i++) printf "w%d-%06d-%03d-%s\n", n, b, i, pad }' >"$OUT/batch$n"
		while :; do
			code=$(curl -s -o "$OUT/body$n" -D "$OUT/hdr$n" -w '%{http_code}' -H "Authorization: Bearer $SILT_TOKEN" \
				-H "Silt-Writer-Id: w$n" -H "Silt-Seq: $b" -H 'Content-Type: application/x-ndjson' \
				--data-binary @"$OUT/batch$n" "$API/v1/tenants/acme/streams/s/events?segment=$n")
			echo "$code $(tr -d '\r' <"$OUT/hdr$n" | awk 'tolower($1) == "retry-after:" { print $2 }')" >>"$OUT/codes$n"
			if [ "$code" = 503 ]; then cat "$OUT/body$n" >>"$OUT/refusals$n"; echo >>"$OUT/refusals$n"; fi
			[ "$code" = 200 ] && break
			sleep 0.2
		done
		echo "$b" >>"$OUT/acked$n"
	done
}
PRODUCERS=
for n in 0 1; do
	producer "$n" &
	PRODUCERS="$PRODUCERS $!"
done
for _ in $(seq 1 300); do
	[ -s "$OUT/refusals0" ] && [ -s "$OUT/refusals1" ] && break
	sleep 0.1
done
check "outage: with tier 2 down, both producers get 503 once tier 1 fills" test -s "$OUT/refusals0" -a -s "$OUT/refusals1"
expect_eq "outage: ... each 503 with Retry-After" "$(cat "$OUT"/codes* | awk '$1 == 503 && $2 == "" ' | wc -l)" 0
check "outage: ... saying that tier 1's space or backlog bound is reached" \
	grep -q -e 'tiering.min_free_bytes' -e 'tiering.backlog_share' "$OUT/refusals0"
# The refusal's own text says "no space left on device for appends"; an
# ENOSPC from a write would say it without that.
expect_eq "outage: no write met ENOSPC (silt's log and the answers)" \
	"$(cat "$OUT/silt.log" "$OUT"/refusals* | grep 'no space left on device' | grep -vc 'for appends')" 0
check "outage: tier 1 still has free space" test "$(df --output=avail -k "$OUT/data" | tail -1 | tr -d ' ')" -gt 0
# Refusals come and go as the write-ahead log's checkpoints free space
# and producers take it again; readiness follows them.
for _ in $(seq 1 100); do
	code=$(curl -s -o "$CONF_TMP/body" -w '%{http_code}' "$API/readyz")
	[ "$code" = 503 ] && break
	sleep 0.05
done
expect_eq "outage: /readyz answers 503 while appends are refused" "$code" 503
check "outage: ... saying appends_refused" grep -q appends_refused "$CONF_TMP/body"

# A restart on the then full disk, tier 2 still down, fails at once.
kill -9 "$SILT_PID"
wait "$SILT_PID" 2>/dev/null
SILT_PID=
dd if=/dev/zero of="$OUT/data/filler" bs=1M >/dev/null 2>&1
timeout 60 "$SILT_BIN" serve "${OFLAGS[@]}" >"$OUT/full.out" 2>&1
expect_eq "outage: serve on the full disk with tier 2 down exits with an error (not a hang: 124)" "$?" 1
check "outage: ... saying to free space" grep -q "free space there" "$OUT/full.out"
rm -f "$OUT/data/filler"
serve_bg || { stop_outage; trap on_exit EXIT; return; }

# Tier 2 returns; nobody touches silt.
start_moto
ready=
for _ in $(seq 1 450); do
	if curl -fsS "$API/readyz" >/dev/null 2>&1; then ready=1; break; fi
	sleep 0.1
done
check "outage: silt drains tier 1 by itself and /readyz turns ready once tier 2 is back" test -n "$ready"
acked0=$(wc -l <"$OUT/acked0")
acked1=$(wc -l <"$OUT/acked1")
more() { [ "$(wc -l <"$OUT/acked0")" -ge $((acked0 + $1)) ] && [ "$(wc -l <"$OUT/acked1")" -ge $((acked1 + $1)) ]; }
for _ in $(seq 1 200); do
	more 3 && break
	sleep 0.1
done
check "outage: the producers' appends succeed again" more 3
stop_producers

# Every acknowledged event once: the producers' acknowledged batches
# against the native read, then against the files the WebHDFS head
# serves once tiering has caught up.
for n in 0 1; do
	awk -v n="$n" '{ for (i = 0; i < 256; i++) printf "w%d-%06d-%03d\n", n, $1, i }' "$OUT/acked$n"
done | sort >"$OUT/want"
"$SILT_BIN" read acme/s 2>/dev/null | cut -c1-13 | sort >"$OUT/native"
expect_eq "outage: every acknowledged event reads back once (native API)" "$(md5sum <"$OUT/native")" "$(md5sum <"$OUT/want")"
for _ in $(seq 1 100); do
	"$SILT_BIN" stream describe acme/s -o json >"$OUT/describe" 2>/dev/null
	jq -e '[.segments[].next_offset] == [.tiering.segments[].tiered_offset]' "$OUT/describe" >/dev/null 2>&1 && break
	sleep 0.1
done
: >"$OUT/files"
for n in 0 1; do
	curl -s -H "Authorization: Bearer $SILT_TOKEN" "$HDFS/webhdfs/v1/acme/s/segment=$n?op=LISTSTATUS" |
		jq -r '.FileStatuses.FileStatus[].pathSuffix' | while read -r f; do
		curl -sL -H "Authorization: Bearer $SILT_TOKEN" "$HDFS/webhdfs/v1/acme/s/segment=$n/$f?op=OPEN" >>"$OUT/files"
	done
done
expect_eq "outage: every acknowledged event once in tier 2 (WebHDFS)" "$(cut -c1-13 "$OUT/files" | sort | md5sum)" "$(md5sum <"$OUT/want")"
check "outage: tier 1's fully tiered active files were rolled and freed" \
	sh -c "curl -s '$API/metrics' | awk 'BEGIN { r = 1 } /^silt_tier_active_file_rolls_total/ { r = !(\$2 > 0) } END { exit r }'"
stop_outage
trap on_exit EXIT
