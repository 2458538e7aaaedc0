# Shared helpers for the conformance suites: start a real `silt serve` on
# free loopback ports with a fresh data dir, stop it on exit, and small
# assertion helpers. Sourced by run.sh and each suite.

SILT_BIN=${SILT_BIN:-$PWD/bin/silt}

# Downloads (Python tools, pip's and Maven's caches) go under SILT_CACHE;
# see venv.sh. The virtualenv's bin leads this run's PATH only, so that
# `aws`, `python3` and the rest are the suites' own, and nothing is added
# to the PATH of the shell that started the run.
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
PATH=$SILT_VENV/bin:$PATH
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

# start_silt [FLAGS]: starts silt in a new data dir; sets SILT_DATA, API, S3, KAFKA_PORT, SILT_PID,
# and exports SILT_SERVER / SILT_TOKEN for the CLI.
start_silt() {
	start_silt_in "$(mktemp -d /tmp/silt-conf.XXXXXX)" "$@"
}

# start_silt_in DIR [FLAGS]: start_silt with SILT_DATA=DIR, which exists and
# may already hold a data dir (DIR/data: a restart, or a small filesystem
# mounted there).
start_silt_in() {
	SILT_DATA=$1
	shift
	read -r API_PORT S3_PORT NFS_PORT HDFS_PORT KAFKA_PORT <<<"$(free_ports 5)"
	API="http://127.0.0.1:$API_PORT"
	S3="http://127.0.0.1:$S3_PORT"
	HDFS="http://127.0.0.1:$HDFS_PORT"
	"$SILT_BIN" serve --core.dir "$SILT_DATA/data" --api.listen "127.0.0.1:$API_PORT" \
		--s3.listen "127.0.0.1:$S3_PORT" --nfs.listen "127.0.0.1:$NFS_PORT" \
		--webhdfs.listen "127.0.0.1:$HDFS_PORT" --kafka.listen "127.0.0.1:$KAFKA_PORT" "$@" \
		>"$SILT_DATA/silt.log" 2>&1 &
	SILT_PID=$!
	for _ in $(seq 1 100); do
		if curl -fsS "$API/readyz" >/dev/null 2>&1; then break; fi
		sleep 0.1
	done
	if ! curl -fsS "$API/readyz" >/dev/null 2>&1; then
		# A server that does not start is a failure of the suite that
		# needed it, never a silent skip of its checks.
		fail "silt serve did not start (flags: $*); its log:"
		sed 's/^/       /' "$SILT_DATA/silt.log"
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

# apt_install PKG...: install Debian packages, updating the package lists
# once per run first. Whether it worked is for the caller to check.
apt_install() {
	if [ -z "${APT_UPDATED:-}" ]; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || true
		APT_UPDATED=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1 || true
}

# need CMD PKG: make sure CMD exists, installing Debian package PKG if not.
# In CI a tool that cannot be installed fails the run.
need() {
	command -v "$1" >/dev/null 2>&1 && return 0
	echo "installing $2 for $1"
	apt_install "$2"
	if ! command -v "$1" >/dev/null 2>&1; then
		# A missing client is a failure, never a silent skip: the suite
		# that needed it did not run.
		fail "cannot install $1 (Debian package $2); the checks that need it did not run"
		return 1
	fi
}

# need_pip CMD PKG: make sure the suites' virtualenv has command CMD,
# installing PyPI package PKG into it if not. A CMD installed elsewhere
# does not count: the suites run the virtualenv's, whatever the machine has.
need_pip() {
	[ -x "$SILT_VENV/bin/$1" ] && return 0
	venv_install "$2"
	hash -r
	if [ ! -x "$SILT_VENV/bin/$1" ]; then
		fail "cannot install $1 (PyPI package $2) into $SILT_VENV; the checks that need it did not run"
		return 1
	fi
}

# need_pymod MODULES PKG...: make sure the virtualenv's python3 imports
# MODULES (space-separated), installing PyPI packages PKG... if not.
# Whether it worked is for the caller to check (venv_has_module).
need_pymod() {
	local mods=$1
	shift
	# shellcheck disable=SC2086 # MODULES is a list
	venv_has_module $mods && return 0
	venv_install "$@"
	hash -r
}

# start_minicluster [START_ARGS...]: starts a real single-datanode HDFS
# (conformance/hdfs/start.sh: Apache Hadoop's MiniDFSCluster, with WebHDFS)
# on loopback and waits until it serves. Sets MINI_NN (namenode RPC
# host:port), MINI_WEBHDFS (http://127.0.0.1:P/webhdfs/v1), MINI_PID and
# MINI_DIR (its data and log, minihdfs.log; kept until stop_minicluster).
# START_ARGS go to start.sh, e.g. --block-size 1048576 or --nn-port N; with
# MINI_DIR already set (after stop_minicluster --keep) the same cluster,
# files included, starts again. The first run fetches the Hadoop jars.
start_minicluster() {
	need java default-jdk-headless || return 1
	need javac default-jdk-headless || return 1
	need mvn maven || return 1
	need jq jq || return 1
	if [ -z "${MINI_DIR:-}" ]; then MINI_DIR=$(mktemp -d /tmp/silt-minihdfs.XXXXXX); fi
	rm -f "$MINI_DIR/ready"
	conformance/hdfs/start.sh --dir "$MINI_DIR/cluster" --ready "$MINI_DIR/ready" "$@" \
		>>"$MINI_DIR/minihdfs.log" 2>&1 </dev/null &
	MINI_PID=$!
	# Up to 5 minutes: a first run downloads the jars from Maven Central.
	for _ in $(seq 1 3000); do
		[ -s "$MINI_DIR/ready" ] && break
		kill -0 "$MINI_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -s "$MINI_DIR/ready" ]; then
		echo "the HDFS minicluster did not start; the end of its log ($MINI_DIR/minihdfs.log):"
		grep -v '^\s*at ' "$MINI_DIR/minihdfs.log" | tail -20 | sed 's/^/       /'
		stop_minicluster --keep
		return 1
	fi
	MINI_NN=$(jq -r .namenode "$MINI_DIR/ready")
	MINI_WEBHDFS=$(jq -r .webhdfs "$MINI_DIR/ready")
}

# stop_minicluster [--keep]: stops the minicluster (SIGTERM: a clean
# shutdown) and removes MINI_DIR, unless --keep leaves it for a restart.
stop_minicluster() {
	if [ -n "${MINI_PID:-}" ]; then
		kill "$MINI_PID" 2>/dev/null || true
		wait "$MINI_PID" 2>/dev/null || true
		MINI_PID=
	fi
	if [ "${1:-}" != "--keep" ] && [ -n "${MINI_DIR:-}" ]; then
		rm -rf "$MINI_DIR"
		MINI_DIR=
	fi
}
