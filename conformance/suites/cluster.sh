# Cluster mode, step 1: `silt serve` with its metadata on a real etcd (the
# server `make etcd` builds, or Debian's etcd-server). Everything created
# survives a restart of silt; a second node on the same prefix is refused;
# with etcd stopped, metadata changes answer 503 within the request timeout
# while reads and appends to existing streams go on.

# etcd_bin: the binary internal/etcdtest would run.
etcd_bin() {
	if [ -n "${SILT_ETCD_BIN:-}" ]; then echo "$SILT_ETCD_BIN"; return; fi
	local v
	v=$(awk '$1 == "require" && $2 == "go.etcd.io/etcd/server/v3" {print $3}' internal/etcdtest/etcdbin/go.mod)
	if [ -x "$SILT_CACHE/etcd/etcd-$v" ]; then echo "$SILT_CACHE/etcd/etcd-$v"; return; fi
	command -v etcd || true
}

ETCD_BIN=$(etcd_bin)
if [ -z "$ETCD_BIN" ]; then
	echo "building etcd (make etcd)"
	make --no-print-directory etcd >/dev/null 2>&1
	ETCD_BIN=$(etcd_bin)
fi
if [ -z "$ETCD_BIN" ]; then
	fail "no etcd server (make etcd builds one); the cluster checks did not run"
else
	ETCD_DIR=$(mktemp -d /tmp/silt-etcd.XXXXXX)
	read -r ETCD_CLIENT ETCD_PEER <<<"$(free_ports 2)"
	ETCD_URL="http://127.0.0.1:$ETCD_CLIENT"
	start_etcd() {
		"$ETCD_BIN" --name conf --data-dir "$ETCD_DIR/data" \
			--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
			--listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
			--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
			--initial-cluster "conf=http://127.0.0.1:$ETCD_PEER" \
			--log-level error >>"$ETCD_DIR/etcd.log" 2>&1 &
		ETCD_PID=$!
		for _ in $(seq 1 100); do
			curl -fsS "$ETCD_URL/health" >/dev/null 2>&1 && return 0
			sleep 0.1
		done
		fail "etcd did not start; its log:"
		sed 's/^/       /' "$ETCD_DIR/etcd.log"
		return 1
	}
	stop_etcd() {
		if [ -n "${ETCD_PID:-}" ]; then
			kill -CONT "$ETCD_PID" 2>/dev/null || true
			kill "$ETCD_PID" 2>/dev/null || true
			wait "$ETCD_PID" 2>/dev/null || true
			ETCD_PID=
		fi
	}
	trap 'stop_etcd; rm -rf "$ETCD_DIR"; on_exit' EXIT

	CLUSTER=(--cluster.etcd.endpoints "$ETCD_URL" --cluster.etcd.prefix /conformance/ --cluster.etcd.request_timeout 1s)
	if start_etcd && start_silt "${CLUSTER[@]}"; then
		AUTH=(-H "Authorization: Bearer $SILT_TOKEN")
		code() { curl -s -o "$CONF_TMP/body" -w '%{http_code}' "$@"; }
		check "cluster: the log says metadata is on etcd" grep -q '"metadata on etcd"' "$SILT_DATA/silt.log"
		check "cluster: tenant create" "$SILT_BIN" tenant create acme
		check "cluster: stream create" "$SILT_BIN" stream create acme/orders --segments 2
		seq 1 500 >"$CONF_TMP/seq"
		check "cluster: append" "$SILT_BIN" append acme/orders --file "$CONF_TMP/seq"
		check "cluster: principal create" "$SILT_BIN" principal create reader
		READER=$("$SILT_BIN" token create reader --label conformance 2>/dev/null)
		check "cluster: grant read" "$SILT_BIN" grant reader read acme/orders
		expect_eq "cluster: read back" "$("$SILT_BIN" read acme/orders | sort -n | md5sum)" "$(md5sum <"$CONF_TMP/seq")"

		# A second node on the same prefix: refused, saying why.
		SECOND=$(mktemp -d /tmp/silt-conf.XXXXXX)
		read -r P1 P2 P3 P4 <<<"$(free_ports 4)"
		if "$SILT_BIN" serve --core.dir "$SECOND/data" --api.listen "127.0.0.1:$P1" --s3.listen "127.0.0.1:$P2" \
			--nfs.listen "127.0.0.1:$P3" --webhdfs.listen "127.0.0.1:$P4" "${CLUSTER[@]}" >"$SECOND/log" 2>&1; then
			fail "cluster: a second node on the prefix is refused (it started)"
		else
			check "cluster: a second node on the prefix is refused" grep -q "another silt node serves prefix /conformance/" "$SECOND/log"
		fi
		expect_eq "cluster: the refused node wrote no identity" "$(ls "$SECOND/data" 2>/dev/null | grep -c cluster.json)" 0
		rm -rf "$SECOND"

		# etcd stopped (SIGSTOP: it hangs rather than refusing): metadata
		# changes fail with 503 within the request timeout; reads and
		# appends to an existing stream do not need etcd.
		kill -STOP "$ETCD_PID"
		expect_eq "cluster: etcd stopped → tenant create 503" "$(code --max-time 30 "${AUTH[@]}" -d '{"name":"later"}' "$API/v1/tenants")" 503
		check "cluster: the 503 says the metadata store is unavailable" grep -q "metadata store unavailable" "$CONF_TMP/body"
		check "cluster: the 503 says the change may still be applied" grep -q "may still be applied" "$CONF_TMP/body"
		expect_eq "cluster: etcd stopped → append still 200" "$(code --max-time 30 "${AUTH[@]}" --data-binary '501' "$API/v1/tenants/acme/streams/orders/events")" 200
		expect_eq "cluster: etcd stopped → reads go on" "$(SILT_TOKEN=$READER "$SILT_BIN" read acme/orders | wc -l)" 501
		kill -CONT "$ETCD_PID"

		# Restart silt on its data dir: everything is still there.
		kill "$SILT_PID"
		wait "$SILT_PID" 2>/dev/null
		SILT_PID=
		DATA=$SILT_DATA
		if start_silt_in "$DATA" "${CLUSTER[@]}"; then
			expect_eq "cluster: after restart, the stream's events" "$(SILT_TOKEN=$READER "$SILT_BIN" read acme/orders | wc -l)" 501
			check "cluster: after restart, the reader's grant" sh -c "\"$SILT_BIN\" grants reader | grep -q acme/orders"
			if echo x | SILT_TOKEN=$READER "$SILT_BIN" append acme/orders 2>/dev/null; then
				fail "cluster: after restart, the reader still may not append"
			else
				pass "cluster: after restart, the reader still may not append"
			fi
			# The create answered 503 while etcd hung may or may not have
			# been applied when it went on (the 503 says so); a client that
			# checks finds one answer or the other, and a new create works.
			if "$SILT_BIN" tenant get later >/dev/null 2>&1; then
				pass "cluster: after restart, the hung tenant create is applied (as the 503 allowed)"
			else
				check "cluster: after restart, the hung tenant create is not applied, and it can be done again" "$SILT_BIN" tenant create later
			fi
			check "cluster: after restart, tenant create works" "$SILT_BIN" tenant create after
		fi

		# The same data dir without etcd: refused, it belongs to the cluster.
		kill "$SILT_PID"
		wait "$SILT_PID" 2>/dev/null
		SILT_PID=
		if "$SILT_BIN" serve --core.dir "$DATA/data" --api.listen 127.0.0.1:0 --s3.listen 127.0.0.1:0 \
			--nfs.listen 127.0.0.1:0 --webhdfs.listen 127.0.0.1:0 >"$CONF_TMP/single.log" 2>&1; then
			fail "cluster: the cluster's data dir without etcd is refused (it started)"
		else
			check "cluster: the cluster's data dir without etcd is refused" grep -q "belongs to cluster" "$CONF_TMP/single.log"
		fi
		check "cluster: …and its logs are still there" test -d "$DATA/data/logs/acme"
	fi
	stop_etcd
	rm -rf "$ETCD_DIR"
	trap on_exit EXIT
fi
