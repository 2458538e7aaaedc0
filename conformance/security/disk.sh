# A full disk: tier 1 on a 24 MiB tmpfs filled up by another file. Appends
# get a 503 that says the storage is full without naming the server's
# paths, a stream whose first segment file cannot be created is refused
# the same way, appends resume once space returns, and after a kill -9
# every acknowledged event is still there.
DISK=$(mktemp -d /tmp/silt-disk.XXXXXX)
mkdir -p -m 0700 "$DISK/data" "$DISK/tier2"
if ! mount -t tmpfs -o size=24m,mode=0700 silt-disk "$DISK/data"; then
	fail "disk: mount a 24 MiB tmpfs for tier 1 (the suite runs as root)"
	rm -rf "$DISK"
	return
fi
# stop_disk: stop the server, then take the tmpfs away before the suite's
# stop_silt removes the directory.
stop_disk() {
	if [ -n "${SILT_PID:-}" ]; then kill "$SILT_PID" 2>/dev/null; wait "$SILT_PID" 2>/dev/null; SILT_PID=; fi
	umount "$DISK/data" 2>/dev/null
}
DFLAGS=(--tiering.fs.dir "$DISK/tier2")
start_silt_in "$DISK" "${DFLAGS[@]}" || { stop_disk; return; }
AUTH=(-H "Authorization: Bearer $SILT_TOKEN")
dcode() { curl -s -o "$CONF_TMP/body" -w '%{http_code}' "${AUTH[@]}" "$@"; }
"$SILT_BIN" tenant create acme >/dev/null
"$SILT_BIN" stream create acme/a >/dev/null
seq 1 500 | "$SILT_BIN" append acme/a >/dev/null 2>&1
expect_eq "disk: 500 events acknowledged before the disk fills" "$("$SILT_BIN" read acme/a 2>/dev/null | wc -l)" 500

dd if=/dev/zero of="$DISK/data/filler" bs=1M >/dev/null 2>&1
expect_eq "disk: tier 1's filesystem is full" "$(df --output=avail -k "$DISK/data" | tail -1 | tr -d ' ')" 0

# no_paths NAME: the last answer says the disk is full and names no path.
no_paths() {
	check "$1 says no space left" grep -q "no space left on device" "$CONF_TMP/body"
	check "$1 names no server path" sh -c "! grep -q -e '$DISK' -e '/tmp/' -e '\\.log' '$CONF_TMP/body'"
}
head -c 3000000 /dev/zero | tr '\0' 'x' | fold -w 100 >"$CONF_TMP/big"
expect_eq "disk: a 3 MB batch on a full disk → 503" \
	"$(dcode -H 'Content-Type: application/x-ndjson' --data-binary @"$CONF_TMP/big" "$API/v1/tenants/acme/streams/a/events")" 503
no_paths "disk: the 503"
expect_eq "disk: a one-event append on a full disk → 503" "$(dcode --data-binary 'one' "$API/v1/tenants/acme/streams/a/events")" 503
# A stream created now (its catalog entry fits in the catalog's
# preallocated log) gets an empty segment file: a name takes no blocks,
# but its first append must find blocks on the full disk.
check "disk: a stream created on the full disk" "$SILT_BIN" stream create acme/b
check "disk: acme/b's segment file holds nothing (no space to preallocate it)" \
	sh -c "! find '$DISK/data/logs/acme' -path '*b@*' -name '*.log' -size +0 | grep -q ."
expect_eq "disk: the append that needs a new segment file → 503" "$(dcode --data-binary 'first' "$API/v1/tenants/acme/streams/b/events")" 503
no_paths "disk: the new segment file's 503"
expect_eq "disk: /readyz says not ready while appends are refused" "$(curl -s -o "$CONF_TMP/body" -w '%{http_code}' "$API/readyz")" 503
check "disk: ... with the reason" grep -q appends_refused "$CONF_TMP/body"

rm -f "$DISK/data/filler"
for _ in $(seq 1 100); do
	[ "$(dcode --data-binary 'after' "$API/v1/tenants/acme/streams/a/events")" = 200 ] && break
	sleep 0.1
done
expect_eq "disk: appends resume once space returns" "$(jq -r .first_offset "$CONF_TMP/body")" 500
# acme/b's log failed on the full disk; it tries again a second after its
# last failure, so a client retries as it would after any 503.
for _ in $(seq 1 100); do
	code=$(dcode --data-binary 'first' "$API/v1/tenants/acme/streams/b/events")
	[ "$code" = 200 ] && break
	sleep 0.1
done
expect_eq "disk: the new segment file is created once space returns" "$code" 200

kill -9 "$SILT_PID"
wait "$SILT_PID" 2>/dev/null
SILT_PID=
start_silt_in "$DISK" "${DFLAGS[@]}" || { stop_disk; return; }
"$SILT_BIN" read acme/a 2>/dev/null >"$CONF_TMP/a"
expect_eq "disk: after kill -9, every acknowledged event of acme/a" "$(wc -l <"$CONF_TMP/a")" 501
expect_eq "disk: ... in order, the refused ones absent" "$(head -500 "$CONF_TMP/a" | md5sum)$(tail -1 "$CONF_TMP/a")" "$(seq 1 500 | md5sum)after"
expect_eq "disk: after kill -9, acme/b holds its one acknowledged event" "$("$SILT_BIN" read acme/b 2>/dev/null)" first
check "disk: /readyz ready again with space" curl -fsS "$API/readyz"

# A restart on a full disk fails at once, saying what to do (it used to
# spin inside the catalog with no log line).
kill -9 "$SILT_PID"
wait "$SILT_PID" 2>/dev/null
SILT_PID=
dd if=/dev/zero of="$DISK/data/filler" bs=1M >/dev/null 2>&1
timeout 60 "$SILT_BIN" serve --core.dir "$DISK/data" --api.listen "127.0.0.1:$API_PORT" \
	--s3.listen "127.0.0.1:$S3_PORT" --nfs.listen "127.0.0.1:$NFS_PORT" \
	--webhdfs.listen "127.0.0.1:$HDFS_PORT" --kafka.listen 127.0.0.1:0 "${DFLAGS[@]}" >"$CONF_TMP/full.out" 2>&1
expect_eq "disk: serve on a full disk exits with an error (not a hang: 124)" "$?" 1
check "disk: ... saying to free space" grep -q "free space there" "$CONF_TMP/full.out"
rm -f "$DISK/data/filler"
stop_disk
