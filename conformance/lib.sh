# Shared helpers for the conformance suites: start a real `silt serve` on
# free loopback ports with a fresh data dir, stop it on exit, and small
# assertion helpers. Sourced by run.sh and each suite.

SILT_BIN=${SILT_BIN:-$PWD/bin/silt}
PASS=0
FAIL=0

pass() { PASS=$((PASS + 1)); echo "  ok   $*"; }
fail() { FAIL=$((FAIL + 1)); echo "  FAIL $*"; }

# check NAME CMD...: run CMD, pass if it exits 0.
check() {
	local name=$1
	shift
	if "$@" >"$CONF_TMP/check.out" 2>&1; then pass "$name"; else
		fail "$name"
		sed 's/^/       /' "$CONF_TMP/check.out" | head -20
	fi
}

# expect_eq NAME GOT WANT
expect_eq() {
	if [ "$2" == "$3" ]; then pass "$1"; else fail "$1: got [$2] want [$3]"; fi
}

# free_ports N: print N distinct free TCP ports on 127.0.0.1, chosen together
# so that no port is handed out twice.
free_ports() {
	python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()
PY
}

# start_silt [FLAGS]: starts silt in a new data dir; sets SILT_DATA, API, S3, SILT_PID,
# and exports SILT_SERVER / SILT_TOKEN for the CLI.
start_silt() {
	SILT_DATA=$(mktemp -d /tmp/silt-conf.XXXXXX)
	read -r API_PORT S3_PORT NFS_PORT HDFS_PORT <<<"$(free_ports 4)"
	API="http://127.0.0.1:$API_PORT"
	S3="http://127.0.0.1:$S3_PORT"
	HDFS="http://127.0.0.1:$HDFS_PORT"
	"$SILT_BIN" serve --core.dir "$SILT_DATA/data" --api.listen "127.0.0.1:$API_PORT" \
		--s3.listen "127.0.0.1:$S3_PORT" --nfs.listen "127.0.0.1:$NFS_PORT" \
		--webhdfs.listen "127.0.0.1:$HDFS_PORT" "$@" \
		>"$SILT_DATA/silt.log" 2>&1 &
	SILT_PID=$!
	for _ in $(seq 1 100); do
		if curl -fsS "$API/readyz" >/dev/null 2>&1; then break; fi
		sleep 0.1
	done
	if ! curl -fsS "$API/readyz" >/dev/null 2>&1; then
		echo "silt did not start; its log:"
		cat "$SILT_DATA/silt.log"
		return 1
	fi
	export SILT_SERVER=$API
	export SILT_TOKEN
	SILT_TOKEN=$(cat "$SILT_DATA/data/root.token")
}

stop_silt() {
	if [ -n "${SILT_PID:-}" ]; then
		kill "$SILT_PID" 2>/dev/null || true
		wait "$SILT_PID" 2>/dev/null || true
		SILT_PID=
	fi
	if [ -n "${SILT_DATA:-}" ]; then rm -rf "$SILT_DATA"; fi
}

# need CMD PKG: make sure CMD exists, installing Debian package PKG if not.
# In CI a tool that cannot be installed fails the run.
need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	echo "installing $2 for $1"
	if [ -z "${APT_UPDATED:-}" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
		APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 || true
	if ! command -v "$1" >/dev/null 2>&1; then
		echo "cannot install $1 (package $2)"
		return 1
	fi
}

# need_pip CMD PKG: make sure CMD exists, installing PyPI package PKG if not.
need_pip() {
	command -v "$1" >/dev/null 2>&1 && return 0
	echo "installing $2 (PyPI) for $1"
	python3 -m pip install -q "$2" >/dev/null 2>&1 || true
	hash -r
	if ! command -v "$1" >/dev/null 2>&1; then
		echo "cannot install $1 (PyPI package $2)"
		return 1
	fi
}
