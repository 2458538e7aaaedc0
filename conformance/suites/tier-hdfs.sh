# The hdfs tier-2 backend against a real HDFS: Apache Hadoop's MiniDFSCluster
# (conformance/hdfs/start.sh, through start_minicluster in lib.sh). silt tiers
# into a directory there as its own HDFS user; the files, listed and read with
# curl through the minicluster's own WebHDFS, must be byte-identical to the
# native read of each segment and to what silt's S3 head serves; retention and
# stream deletion must remove them; and with HDFS stopped, appends are still
# acknowledged up to tiering.max_backlog_bytes and the backlog drains into HDFS
# once it is back. The Go backend tests (tiering/hdfs_test.go) run against the
# same namenode.
TH=$CONF_TMP/tier-hdfs
mkdir -p "$TH"
# Chain onto run.sh's cleanup, so an interrupted run stops HDFS too.
trap 'stop_minicluster; on_exit' EXIT

# Bad configuration is refused before anything starts, naming the key.
out=$(timeout 20 "$SILT_BIN" serve --core.dir "$TH/bad" --tiering.backend hdfs --tiering.hdfs.dir /lake 2>&1)
check "tier-hdfs: no namenodes is a config error naming tiering.hdfs.namenodes" grep -q 'tiering.hdfs.namenodes' <<<"$out"
out=$(timeout 20 "$SILT_BIN" serve --core.dir "$TH/bad" --tiering.backend hdfs --tiering.hdfs.namenodes 127.0.0.1:1 2>&1)
check "tier-hdfs: no dir is a config error naming tiering.hdfs.dir" grep -q 'tiering.hdfs.dir' <<<"$out"

# An unreachable namenode does not stop silt from starting; the failure,
# naming the address, shows in describe, and tier 1 keeps the event.
if start_silt --tiering.backend hdfs --tiering.hdfs.namenodes 127.0.0.1:1 --tiering.hdfs.dir /lake \
	--tiering.hdfs.user silt --tiering.max_lag 400ms --tiering.interval 100ms; then
	pass "tier-hdfs: silt starts while the namenode is unreachable"
	"$SILT_BIN" tenant create acme >/dev/null
	"$SILT_BIN" stream create acme/down >/dev/null
	echo '{"n":1}' | "$SILT_BIN" append acme/down 2>/dev/null
	err=
	for _ in $(seq 1 30); do
		err=$("$SILT_BIN" stream describe acme/down -o json 2>/dev/null | jq -r '[.. | .last_error? // empty] | join(" ")')
		[ -n "$err" ] && break
		sleep 0.2
	done
	check "tier-hdfs: describe reports the unreachable namenode" grep -q '127.0.0.1:1' <<<"$err"
	expect_eq "tier-hdfs: tier 1 still serves the event" "$("$SILT_BIN" read acme/down --from 0 2>/dev/null)" '{"n":1}'
else
	fail "tier-hdfs: silt starts while the namenode is unreachable"
fi
stop_silt

if ! start_minicluster --block-size 1048576; then
	fail "tier-hdfs: start the HDFS minicluster (java, mvn, Hadoop 3.4.1 from Maven Central)"
	return
fi
pass "tier-hdfs: HDFS minicluster up (namenode $MINI_NN)"
NN_PORT=${MINI_NN##*:}
# The minicluster's superuser is the OS user that started it. silt writes as
# "silt" into /lake, which the superuser creates and hands over, as an HDFS
# admin would.
SU=$(id -un)
curl -fsS -X PUT "$MINI_WEBHDFS/lake?op=MKDIRS&user.name=$SU" >/dev/null &&
	curl -fsS -X PUT "$MINI_WEBHDFS/lake?op=SETOWNER&owner=silt&user.name=$SU" >/dev/null
check "tier-hdfs: /lake belongs to silt" test "$(curl -fsS "$MINI_WEBHDFS/lake?op=GETFILESTATUS" | jq -r .FileStatus.owner)" = silt

# The Go backend tests, against the live namenode (they skip without it).
if command -v go >/dev/null 2>&1; then
	SILT_TEST_HDFS_NAMENODE=$MINI_NN go test -count=1 -v -run 'HDFS' ./tiering >"$TH/gotest.log" 2>&1
	rc=$?
	if [ $rc -eq 0 ] && grep -q -- '--- PASS: TestHDFSBackend' "$TH/gotest.log" && grep -q -- '--- PASS: TestHDFSTierer' "$TH/gotest.log"; then
		pass "tier-hdfs: go test ./tiering -run HDFS against the minicluster"
	else
		fail "tier-hdfs: go test ./tiering -run HDFS against the minicluster (exit $rc)"
		grep -E -- '--- (FAIL|SKIP)|_test.go' "$TH/gotest.log" | head -20 | sed 's/^/       /'
	fi
else
	fail "tier-hdfs: go is not installed, so the Go backend tests cannot run"
fi

# hdfs_ls DIR: the names in an HDFS directory, through the minicluster's
# WebHDFS (names starting with . are kept, to catch temp files).
hdfs_ls() { curl -fsS "$MINI_WEBHDFS$1?op=LISTSTATUS" | jq -r '.FileStatuses.FileStatus[].pathSuffix' | sort; }
# hdfs_cat DIR: every file of DIR, in name order, concatenated.
hdfs_cat() {
	local f
	for f in $(hdfs_ls "$1"); do curl -fsSL "$MINI_WEBHDFS$1/$f?op=OPEN&user.name=$SU"; done
}
# wait_tiered STREAM: until every segment is tiered up to its next offset.
wait_tiered() {
	local left
	for _ in $(seq 1 150); do
		left=$("$SILT_BIN" stream describe "$1" -o json 2>/dev/null | jq '[.segments[] as $s
			| ([.tiering.segments[]? | select(.segment == $s.id) | .tiered_offset] | first // 0) as $t
			| select($t < $s.next_offset)] | length' 2>/dev/null)
		[ "$left" = 0 ] && return 0
		sleep 0.2
	done
	return 1
}

if ! start_silt --tiering.backend hdfs --tiering.hdfs.namenodes "$MINI_NN" --tiering.hdfs.dir /lake \
	--tiering.hdfs.user silt --tiering.max_lag 400ms --tiering.interval 100ms \
	--tiering.max_chunk_bytes 65536 --tiering.max_backlog_bytes 200000 \
	--tiering.retry.initial 100ms --tiering.retry.max 1s --webhdfs.block_size 1048576; then
	fail "tier-hdfs: silt starts with the hdfs backend"
	return
fi
pass "tier-hdfs: silt starts with the hdfs backend"
"$SILT_BIN" tenant create acme >/dev/null
"$SILT_BIN" stream create acme/clicks --segments 2 >/dev/null
seq 1 6000 | sed 's/.*/{"n":&,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}/' >"$TH/events"
# Routing keys that hash to segment 0 ("left") and segment 1 ("x").
head -3000 "$TH/events" | "$SILT_BIN" append acme/clicks --key left 2>/dev/null
tail -n +3001 "$TH/events" | "$SILT_BIN" append acme/clicks --key x 2>/dev/null
check "tier-hdfs: every event reached tier 2" wait_tiered acme/clicks

read -r AK SK < <("$SILT_BIN" s3-key create root -o json | jq -r '"\(.access_key_id) \(.secret_access_key)"')
# curl signs SigV4 itself; it signs the path and query as written, so they
# are written in S3's canonical encoding ('=' as %3D, '/' in a query as %2F).
S3GET=(curl -fsS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK"
	-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
for s in 0 1; do
	d=/lake/acme/clicks/segment=$s
	hdfs_ls "$d" >"$TH/names$s"
	check "tier-hdfs: segment $s has several chunks in HDFS" test "$(wc -l <"$TH/names$s")" -ge 2
	expect_eq "tier-hdfs: segment $s files are <offset>-<offset>.txt, no temp files" \
		"$(grep -Ev '^[0-9]{20}-[0-9]{20}\.txt$' "$TH/names$s")" ""
	"$SILT_BIN" read acme/clicks --segment "$s" --from 0 >"$TH/native$s" 2>/dev/null
	hdfs_cat "$d" >"$TH/hdfs$s"
	check "tier-hdfs: segment $s files in HDFS = native read" cmp "$TH/native$s" "$TH/hdfs$s"
	: >"$TH/head$s"
	for f in $(cat "$TH/names$s"); do "${S3GET[@]}" "$S3/acme/clicks/segment%3D$s/$f" >>"$TH/head$s"; done
	check "tier-hdfs: segment $s via silt's S3 head = files in HDFS" cmp "$TH/head$s" "$TH/hdfs$s"
	"${S3GET[@]}" "$S3/acme?list-type=2&prefix=clicks%2Fsegment%3D$s%2F" | grep -o '<Key>[^<]*</Key>' |
		sed 's/<[^>]*>//g; s|.*/||' | sort >"$TH/s3names$s"
	check "tier-hdfs: segment $s has the same chunk names in HDFS and the S3 head" cmp "$TH/s3names$s" "$TH/names$s"
done
expect_eq "tier-hdfs: both segments together hold every event" \
	"$(cat "$TH/hdfs0" "$TH/hdfs1" | sort | md5sum)" "$(sort "$TH/events" | md5sum)"
expect_eq "tier-hdfs: files belong to tiering.hdfs.user" \
	"$(curl -fsS "$MINI_WEBHDFS/lake/acme/clicks/segment=0?op=LISTSTATUS" | jq -r '[.FileStatuses.FileStatus[].owner] | unique | join(",")')" silt
# GETFILECHECKSUM: silt's WebHDFS answer for a chunk equals real HDFS's for
# the very same file, which the hdfs backend wrote into the minicluster (1 MiB
# blocks; silt reports the same block size). A one-block chunk, and a 2-block
# one: a 1 MiB event of a framed stream makes a chunk of 1 MiB + 4 bytes.
"$SILT_BIN" stream create acme/big --segments 1 --encoding framed >/dev/null
head -c 1048576 /dev/urandom >"$TH/bigev"
curl -fsS -H "Authorization: Bearer $SILT_TOKEN" -H 'Content-Type: application/octet-stream' \
	--data-binary @"$TH/bigev" "$API/v1/tenants/acme/streams/big/events" >/dev/null
wait_tiered acme/big
bigchunk=$(hdfs_ls /lake/acme/big/segment=0 | head -1)
for f in "clicks/segment=0/$(head -1 "$TH/names0")" "big/segment=0/$bigchunk"; do
	real=$(curl -fsSL "$MINI_WEBHDFS/lake/acme/$f?op=GETFILECHECKSUM" | jq -c .FileChecksum)
	ours=$(curl -fsSL -H "Authorization: Bearer $SILT_TOKEN" "$HDFS/webhdfs/v1/acme/$f?op=GETFILECHECKSUM" | jq -c .FileChecksum)
	expect_eq "tier-hdfs: GETFILECHECKSUM of acme/$f = real HDFS's for the same file" "${ours:-none}" "${real:-none}"
done
expect_eq "tier-hdfs: the 2-block chunk is 1 MiB + 4 bytes in HDFS" \
	"$(curl -fsS "$MINI_WEBHDFS/lake/acme/big/segment=0/$bigchunk?op=GETFILESTATUS" | jq '[.FileStatus.length, .FileStatus.blockSize]' -c)" "[1048580,1048576]"

expect_eq "tier-hdfs: describe shows no tiering error" \
	"$("$SILT_BIN" stream describe acme/clicks -o json 2>/dev/null | jq -r '[.. | .last_error? // empty] | length')" 0

# Retention deletes the oldest chunks' files from HDFS.
"$SILT_BIN" stream create acme/short --segments 1 --retention-bytes 100000 >/dev/null
seq 1 8000 | sed 's/.*/{"r":&,"pad":"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"}/' | "$SILT_BIN" append acme/short 2>/dev/null
wait_tiered acme/short
for _ in $(seq 1 50); do
	bytes=$(curl -fsS "$MINI_WEBHDFS/lake/acme/short?op=GETCONTENTSUMMARY" | jq -r .ContentSummary.length)
	[ "${bytes:-0}" -le 100000 ] && break
	sleep 0.2
done
check "tier-hdfs: retention keeps at most retention-bytes in HDFS (holds $bytes)" test "${bytes:-0}" -gt 0 -a "${bytes:-0}" -le 100000
check "tier-hdfs: retention removed the first chunk's file" \
	sh -c "! curl -fsS '$MINI_WEBHDFS/lake/acme/short/segment=0?op=LISTSTATUS' | grep -q '\"pathSuffix\":\"00000000000000000000-'"
"${S3GET[@]}" "$S3/acme?list-type=2&prefix=short%2Fsegment%3D0%2F" | grep -o '<Key>[^<]*</Key>' | sed 's/<[^>]*>//g; s|.*/||' | sort >"$TH/short-s3"
hdfs_ls /lake/acme/short/segment=0 >"$TH/short-hdfs"
check "tier-hdfs: after retention HDFS and the S3 head list the same chunks" cmp "$TH/short-s3" "$TH/short-hdfs"

# Deleting a stream removes its files and directories from HDFS.
"$SILT_BIN" stream delete acme/short >/dev/null 2>&1
for _ in $(seq 1 50); do
	code=$(curl -s -o /dev/null -w '%{http_code}' "$MINI_WEBHDFS/lake/acme/short?op=GETFILESTATUS")
	[ "$code" = 404 ] && break
	sleep 0.2
done
expect_eq "tier-hdfs: a deleted stream's directory is gone from HDFS" "$code" 404
check "tier-hdfs: the other stream's files stay" cmp <(hdfs_ls /lake/acme/clicks/segment=0) "$TH/names0"

# A per-stream tier prefix puts the stream's files under
# <dir>/<prefix>/<tenant>/<stream>/; the heads show the usual path.
"$SILT_BIN" stream create acme/arch --segments 1 --tier-prefix archive/2026 >/dev/null
seq 1 3000 | sed 's/.*/{"a":&,"pad":"wwwwwwwwwwwwwwwwwwwwwwwwwwwwwwww"}/' | "$SILT_BIN" append acme/arch 2>/dev/null
check "tier-hdfs: the prefixed stream reached tier 2" wait_tiered acme/arch
"$SILT_BIN" read acme/arch --segment 0 --from 0 >"$TH/native-arch" 2>/dev/null
hdfs_cat /lake/archive/2026/acme/arch/segment=0 >"$TH/hdfs-arch"
check "tier-hdfs: tier prefix: files under /lake/archive/2026/acme/arch = native read" cmp "$TH/native-arch" "$TH/hdfs-arch"
code=$(curl -s -o /dev/null -w '%{http_code}' "$MINI_WEBHDFS/lake/acme/arch?op=GETFILESTATUS")
expect_eq "tier-hdfs: tier prefix: nothing under /lake/acme/arch" "$code" 404
: >"$TH/head-arch"
for f in $(hdfs_ls /lake/archive/2026/acme/arch/segment=0); do
	"${S3GET[@]}" "$S3/acme/arch/segment%3D0/$f" >>"$TH/head-arch"
done
check "tier-hdfs: tier prefix: silt's S3 head serves the stream at its usual path" cmp "$TH/head-arch" "$TH/hdfs-arch"
out=$("$SILT_BIN" stream create acme/bad --tier-prefix ../escape 2>&1)
check "tier-hdfs: a tier prefix with .. is refused, naming it" grep -q 'tier prefix' <<<"$out"

# HDFS outage: appends are acknowledged while tier 2 is down, up to
# tiering.max_backlog_bytes (200000), then refused with 503; once HDFS is
# back, the backlog drains and the files are byte-identical to the stream.
"$SILT_BIN" stream create acme/outage --segments 1 >/dev/null
seq 1 500 | sed 's/.*/{"o":&}/' | "$SILT_BIN" append acme/outage 2>/dev/null
wait_tiered acme/outage
stop_minicluster --keep
# Plain HTTP appends: the CLI's producer retries a 503 until it is accepted.
acked=0 ackedN=0 refused=
for i in $(seq 1 40); do
	seq 1 400 | sed "s/.*/{\"o\":\"$i-&\",\"pad\":\"zzzzzzzzzzzzzzzzzzzzzzzz\"}/" >"$TH/batch"
	code=$(curl -sS -o "$TH/append.out" -w '%{http_code}' -H "Authorization: Bearer $SILT_TOKEN" \
		-H 'Content-Type: application/x-ndjson' --data-binary @"$TH/batch" "$API/v1/tenants/acme/streams/outage/events")
	case $code in
	2??)
		acked=$((acked + $(wc -c <"$TH/batch")))
		ackedN=$((ackedN + 400))
		;;
	503)
		refused=$(cat "$TH/append.out")
		break
		;;
	*)
		echo "       append got HTTP $code: $(head -c 300 "$TH/append.out")"
		break
		;;
	esac
	sleep 0.15
done
check "tier-hdfs: appends acknowledged while HDFS is down ($acked bytes)" test "$acked" -ge 150000
check "tier-hdfs: past the backlog bound appends are refused, naming it" grep -q 'max_backlog_bytes' <<<"$refused"
err=$("$SILT_BIN" stream describe acme/outage -o json 2>/dev/null | jq -r '[.. | .last_error? // empty] | join(" ")')
check "tier-hdfs: describe reports the outage" test -n "$err"
if start_minicluster --block-size 1048576 --nn-port "$NN_PORT"; then
	pass "tier-hdfs: HDFS back on the same namenode port"
	check "tier-hdfs: the backlog drains once HDFS is back" wait_tiered acme/outage
	"$SILT_BIN" read acme/outage --segment 0 --from 0 >"$TH/native-outage" 2>/dev/null
	hdfs_cat /lake/acme/outage/segment=0 >"$TH/hdfs-outage"
	check "tier-hdfs: after the outage the files in HDFS = native read" cmp "$TH/native-outage" "$TH/hdfs-outage"
	expect_eq "tier-hdfs: no event lost or doubled" "$(wc -l <"$TH/hdfs-outage")" "$((500 + ackedN))"
	check "tier-hdfs: appends are accepted again" curl -fsS -H "Authorization: Bearer $SILT_TOKEN" \
		-H 'Content-Type: application/x-ndjson' --data-binary @"$TH/batch" "$API/v1/tenants/acme/streams/outage/events"
	check "tier-hdfs: no temp file left after the outage" \
		sh -c "! curl -fsS '$MINI_WEBHDFS/lake/acme/outage/segment=0?op=LISTSTATUS' | jq -r '.FileStatuses.FileStatus[].pathSuffix' | grep -q '^\\.'"
else
	fail "tier-hdfs: HDFS back on the same namenode port"
fi

stop_silt
stop_minicluster
trap on_exit EXIT
