# One client must not stop the server: a server under a low descriptor limit
# (ulimit -n 1024, so the heads' caps are derived from it: 128 connections per
# head, 32 per client address) is flooded on all four heads at once with idle
# connections from 127.0.0.2 … 127.0.0.9, more than the caps and more than the
# descriptors. It must stay up, answer a normal request on each head within
# 1 s from 127.0.0.1 meanwhile, and release the descriptors when the clients
# go. Before connection admission the NFS head's accept loop took EMFILE as
# fatal and silt serve exited.
need nfs-ls libnfs-utils || return
need python3 python3 || return

CONN_NOFILE=1024
cat >"$CONF_TMP/silt-nofile" <<SH
#!/bin/sh
ulimit -n $CONN_NOFILE && exec "$SILT_BIN" "\$@"
SH
chmod +x "$CONF_TMP/silt-nofile"
CONN_BIN=$SILT_BIN
SILT_BIN=$CONF_TMP/silt-nofile
start_silt --nfs.exports 'path=/;principal=root;allow=127.0.0.0/8'
CONN_STARTED=$?
SILT_BIN=$CONN_BIN
[ "$CONN_STARTED" -eq 0 ] || return

AUTH=(-H "Authorization: Bearer $SILT_TOKEN")
NFS_URL="nfs://127.0.0.1/?version=3&nfsport=$NFS_PORT&mountport=$NFS_PORT"
curl -s "${AUTH[@]}" -X POST "$API/v1/principals/root/s3-keys" >"$CONF_TMP/s3key"
S3_ID=$(jq -r .access_key_id "$CONF_TMP/s3key")
S3_SECRET=$(jq -r .secret_access_key "$CONF_TMP/s3key")

fds() { ls "/proc/$SILT_PID/fd" 2>/dev/null | wc -l; }
expect_eq "connections: the server runs under ulimit -n $CONN_NOFILE" \
	"$(awk '/Max open files/ {print $4}' "/proc/$SILT_PID/limits")" "$CONN_NOFILE"
CONN_FDS_BEFORE=$(fds)

# The flood: PER connections to each head from each address, all heads at
# once, held open until stdin closes.
cat >"$CONF_TMP/flood.py" <<'PY'
import socket, sys, threading
per, heads = int(sys.argv[1]), sys.argv[2:]
held, lock = [], threading.Lock()
def flood(port):
    for src in range(2, 10):
        for _ in range(per):
            s = socket.socket()
            s.settimeout(5)
            try:
                s.bind((f"127.0.0.{src}", 0))
                s.connect(("127.0.0.1", int(port)))
            except OSError:
                s.close()
                continue
            with lock:
                held.append(s)
threads = [threading.Thread(target=flood, args=(p,)) for p in heads]
for t in threads: t.start()
for t in threads: t.join()
print(len(held), flush=True)
sys.stdin.read()
PY
CONN_PER=40 # 8 addresses × 40 × 4 heads = 1280 connections
coproc FLOOD { python3 "$CONF_TMP/flood.py" $CONN_PER "$API_PORT" "$S3_PORT" "$NFS_PORT" "$HDFS_PORT"; }
read -r CONN_HELD <&"${FLOOD[0]}"
echo "  flood: $CONN_HELD of $((8 * CONN_PER * 4)) connections opened; the server holds $(fds) descriptors"

check "connections: the server is up under the flood" kill -0 "$SILT_PID"

# within1s NAME CMD...: CMD succeeds within 1 s; prints how long it took.
within1s() {
	local name=$1 start end
	shift
	start=$(date +%s%N)
	if timeout 1 "$@" >"$CONF_TMP/check.out" 2>&1; then
		end=$(date +%s%N)
		pass "$name ($(((end - start) / 1000000)) ms)"
	else
		fail "$name"
		sed 's/^/       /' "$CONF_TMP/check.out" | head -5
	fi
}
normal_requests() {
	within1s "connections: api GET /readyz $1" curl -fsS "$API/readyz"
	within1s "connections: api GET /v1/tenants with a token $1" curl -fsS "${AUTH[@]}" "$API/v1/tenants"
	within1s "connections: s3 ListBuckets $1" curl -fsS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3_ID:$S3_SECRET" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$S3/"
	within1s "connections: webhdfs GETFILESTATUS / $1" curl -fsS "${AUTH[@]}" "$HDFS/webhdfs/v1/?op=GETFILESTATUS"
	within1s "connections: nfs-ls / $1" nfs-ls "$NFS_URL"
}
normal_requests "under the flood"

curl -s "$API/metrics" >"$CONF_TMP/metrics"
for head in api s3 nfs webhdfs; do
	check "connections: $head refused connections over the per-client cap" \
		grep -Eq "^silt_connections_refused_total\{head=\"$head\",reason=\"per_client\"\} [1-9]" "$CONF_TMP/metrics"
	check "connections: $head closed idle connections at its cap" \
		grep -Eq "^silt_connections_evicted_total\{head=\"$head\",reason=\"max_connections\"\} [1-9]" "$CONF_TMP/metrics"
done

# The clients go: the server's descriptors come back to about where they
# were (the normal requests may leave a few keep-alive connections).
exec {FLOOD[1]}>&-
wait "$FLOOD_PID" 2>/dev/null
for _ in $(seq 1 100); do
	[ "$(fds)" -le $((CONN_FDS_BEFORE + 16)) ] && break
	sleep 0.1
done
CONN_FDS_AFTER=$(fds)
check "connections: descriptors released when the clients go ($CONN_FDS_BEFORE before, $CONN_FDS_AFTER after)" \
	test "$CONN_FDS_AFTER" -le $((CONN_FDS_BEFORE + 16))
check "connections: the server is still up" kill -0 "$SILT_PID"
normal_requests "after the flood"
