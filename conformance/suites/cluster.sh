# Cluster mode: `silt serve` with its metadata on a real etcd (the server
# `make etcd` builds, or Debian's etcd-server). Everything created survives
# a restart of silt; a second node on the same prefix is refused; the node
# lists itself in silt cluster nodes; with etcd stopped, metadata changes
# answer 503 within the request timeout and /readyz turns 503 while reads
# and appends to existing streams go on; a node with another secrets key is
# refused; silt cluster init turns a single node into a cluster's first
# node that serves the same data.

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

	CLUSTER=(--cluster.etcd.endpoints "$ETCD_URL" --cluster.etcd.prefix /conformance/ --cluster.etcd.request_timeout 1s --cluster.lease_ttl 2s)
	# wait_code URL CODE: poll URL until it answers CODE (30 s at most).
	wait_code() {
		for _ in $(seq 1 300); do
			[ "$(curl -s -o "$CONF_TMP/body" -w '%{http_code}' --max-time 5 "$1")" == "$2" ] && return 0
			sleep 0.1
		done
		return 1
	}
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

		# Membership: this node, with its heads' addresses.
		"$SILT_BIN" cluster nodes -o json >"$CONF_TMP/nodes.json" 2>&1
		expect_eq "cluster: silt cluster nodes lists this node" "$(jq -r '[(.nodes | length), .nodes[0].self, .nodes[0].addrs.api, .nodes[0].addrs.s3] | map(tostring) | join(" ")' "$CONF_TMP/nodes.json")" "1 true 127.0.0.1:$API_PORT 127.0.0.1:$S3_PORT"
		NODE_ID=$(jq -r '.nodes[0].id // empty' "$CONF_TMP/nodes.json")
		check "cluster: the node id is the one in cluster.json" sh -c "[ -n '$NODE_ID' ] && grep -q '\"node_id\": \"$NODE_ID\"' '$SILT_DATA/data/cluster.json'"
		expect_eq "cluster: GET /v1/cluster/nodes needs admin" "$(code -H "Authorization: Bearer $READER" "$API/v1/cluster/nodes")" 403
		check "cluster: /metrics has etcd round trips by op" sh -c "curl -fsS '$API/metrics' | grep -q 'silt_etcd_request_duration_seconds_count{op=\"txn\"}'"
		check "cluster: /metrics has the lease up" sh -c "curl -fsS '$API/metrics' | grep -qx 'silt_cluster_lease_up 1'"

		# A second node on the same prefix: refused, saying why.
		SECOND=$(mktemp -d /tmp/silt-conf.XXXXXX)
		read -r P1 P2 P3 P4 <<<"$(free_ports 4)"
		if "$SILT_BIN" serve --core.dir "$SECOND/data" --api.listen "127.0.0.1:$P1" --s3.listen "127.0.0.1:$P2" \
			--nfs.listen "127.0.0.1:$P3" --webhdfs.listen "127.0.0.1:$P4" --kafka.listen 127.0.0.1:0 "${CLUSTER[@]}" >"$SECOND/log" 2>&1; then
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
		if wait_code "$API/readyz" 503; then pass "cluster: etcd stopped → /readyz 503"; else fail "cluster: etcd stopped → /readyz 503"; fi
		check "cluster: …saying etcd is unreachable, and since when" grep -q '"etcd_unreachable".*unreachable since' "$CONF_TMP/body"
		kill -CONT "$ETCD_PID"
		if wait_code "$API/readyz" 200; then pass "cluster: etcd back → /readyz 200"; else fail "cluster: etcd back → /readyz 200"; fi

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
			--nfs.listen 127.0.0.1:0 --webhdfs.listen 127.0.0.1:0 --kafka.listen 127.0.0.1:0 >"$CONF_TMP/single.log" 2>&1; then
			fail "cluster: the cluster's data dir without etcd is refused (it started)"
		else
			check "cluster: the cluster's data dir without etcd is refused" grep -q "belongs to cluster" "$CONF_TMP/single.log"
		fi
		check "cluster: …and its logs are still there" test -d "$DATA/data/logs/acme"

		# A node with another secrets key: refused, and it changes nothing.
		OTHER=$(mktemp -d /tmp/silt-conf.XXXXXX)
		mkdir -p "$OTHER/data"
		head -c 32 /dev/urandom >"$OTHER/other.key"
		chmod 600 "$OTHER/other.key"
		ETCD_BEFORE=$(curl -s "$ETCD_URL/v3/kv/range" -d '{"key":"L2NvbmZvcm1hbmNlLw==","range_end":"L2NvbmZvcm1hbmNlMA==","keys_only":true}' | jq -c '[.kvs[].key] | sort')
		if "$SILT_BIN" serve --core.dir "$OTHER/data" --api.listen 127.0.0.1:0 --s3.listen 127.0.0.1:0 --nfs.listen 127.0.0.1:0 \
			--webhdfs.listen 127.0.0.1:0 --kafka.listen 127.0.0.1:0 --auth.secrets_key_file "$OTHER/other.key" "${CLUSTER[@]}" >"$OTHER/log" 2>&1; then
			fail "cluster: a node with another secrets key is refused (it started)"
		else
			check "cluster: a node with another secrets key is refused, naming both keys" grep -q "seals S3 secrets with secrets key [0-9a-f]*, but this node's key (auth.secrets_key_file) is [0-9a-f]*" "$OTHER/log"
		fi
		expect_eq "cluster: …its data dir holds no identity" "$(ls "$OTHER/data" | grep -c cluster.json)" 0
		expect_eq "cluster: …and etcd's keys are as they were" "$(curl -s "$ETCD_URL/v3/kv/range" -d '{"key":"L2NvbmZvcm1hbmNlLw==","range_end":"L2NvbmZvcm1hbmNlMA==","keys_only":true}' | jq -c '[.kvs[].key] | sort')" "$ETCD_BEFORE"
		rm -rf "$OTHER"
	fi

	# From one node to a cluster: a single node's data, moved with
	# silt cluster init, served by the node on etcd.
	if [ -n "${DATA:-}" ]; then rm -rf "$DATA"; fi
	if start_silt; then
		INIT_DATA=$SILT_DATA
		check "init: tenant, stream, append" sh -c "'$SILT_BIN' tenant create shop && '$SILT_BIN' stream create shop/sales && seq 1 300 | '$SILT_BIN' append shop/sales"
		check "init: principal and grant" sh -c "'$SILT_BIN' principal create clerk && '$SILT_BIN' grant clerk read shop/sales"
		CLERK=$("$SILT_BIN" token create clerk 2>/dev/null)
		"$SILT_BIN" s3-key create root -o json >"$CONF_TMP/key.json" 2>/dev/null
		INIT=(--cluster.etcd.endpoints "$ETCD_URL" --cluster.etcd.prefix /conformance-init/ --cluster.lease_ttl 2s)
		if "$SILT_BIN" cluster init --core.dir "$INIT_DATA/data" "${INIT[@]}" >"$CONF_TMP/init.out" 2>&1; then
			fail "init: refused while silt serve runs on the directory (it ran)"
		else
			check "init: refused while silt serve runs on the directory" grep -q "is in use by another silt serve" "$CONF_TMP/init.out"
		fi
		kill "$SILT_PID"
		wait "$SILT_PID" 2>/dev/null
		SILT_PID=
		check "init: silt cluster init" sh -c "'$SILT_BIN' cluster init --core.dir '$INIT_DATA/data' ${INIT[*]} >'$CONF_TMP/init.out' 2>&1"
		check "init: …printed its progress" grep -q "/.* records" "$CONF_TMP/init.out"
		check "init: …moved the single node's catalog aside" test -d "$INIT_DATA/data/catalog.single-node"
		if start_silt_in "$INIT_DATA" "${INIT[@]}"; then
			expect_eq "init: the events, read on the cluster's node" "$("$SILT_BIN" read shop/sales | md5sum)" "$(seq 1 300 | md5sum)"
			expect_eq "init: the clerk's token and grant" "$(SILT_TOKEN=$CLERK "$SILT_BIN" read shop/sales | wc -l)" 300
			expect_eq "init: the S3 key made before init signs" "$(curl -s -o /dev/null -w '%{http_code}' -H "x-amz-content-sha256: $(printf '' | sha256sum | cut -d' ' -f1)" --aws-sigv4 aws:amz:us-east-1:s3 --user "$(jq -r .access_key_id "$CONF_TMP/key.json"):$(jq -r .secret_access_key "$CONF_TMP/key.json")" "$S3/shop?list-type=2")" 200
			expect_eq "init: the node lists itself" "$("$SILT_BIN" cluster nodes -o json | jq -r '.nodes | length')" 1
		fi
	fi
	stop_etcd
	rm -rf "$ETCD_DIR"
	trap on_exit EXIT
fi
