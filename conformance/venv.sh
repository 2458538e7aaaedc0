# The suites' downloads live in one cache directory, SILT_CACHE
# (default ~/.cache/silt), never in the user's Python or on their PATH:
#   $SILT_CACHE/venv   a private virtualenv holding every Python tool the
#                      suites and the Go tests run (the aws CLI v1, s3cmd,
#                      boto3, moto, fsspec, hdfs, pyspark), created once and
#                      reused; a run puts its bin first on the run's own PATH
#   $SILT_CACHE/pip    pip's download cache
#   $SILT_CACHE/m2     Maven's local repository (the Hadoop jars)
# Removing the directory undoes all of it; the next run downloads again.
#
# Sourced by lib.sh. Run as a script, `bash conformance/venv.sh CMD PKG`
# makes sure the virtualenv has command CMD, installing PyPI package PKG
# if not, and prints the command's absolute path (the Go tests use it to
# find moto_server).

SILT_CACHE=${SILT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/silt}
SILT_VENV=$SILT_CACHE/venv
SILT_M2=$SILT_CACHE/m2
export SILT_CACHE

# venv_ready: create the virtualenv if it does not exist yet. Debian's
# python3 needs python3-venv for that; it is installed if missing.
venv_ready() {
	[ -x "$SILT_VENV/bin/python3" ] && return 0
	mkdir -p "$SILT_CACHE"
	echo "creating the Python virtualenv for the suites' tools in $SILT_VENV" >&2
	if ! python3 -m venv "$SILT_VENV" >/dev/null 2>&1; then
		rm -rf "$SILT_VENV"
		if declare -F apt_install >/dev/null; then apt_install python3-venv; fi
		python3 -m venv "$SILT_VENV" >/dev/null 2>&1 || {
			rm -rf "$SILT_VENV"
			echo "cannot create a virtualenv with python3 -m venv (Debian: python3-venv)" >&2
			return 1
		}
	fi
}

# venv_install PKG...: install PyPI packages into the virtualenv, with
# pip's download cache under SILT_CACHE.
venv_install() {
	venv_ready || return 1
	echo "installing $* (PyPI) into $SILT_VENV" >&2
	PIP_CACHE_DIR=$SILT_CACHE/pip PIP_DISABLE_PIP_VERSION_CHECK=1 \
		"$SILT_VENV/bin/python3" -m pip install -q "$@" >/dev/null 2>&1
}

# venv_has_module MODULE...: whether the virtualenv's python imports them.
venv_has_module() {
	[ -x "$SILT_VENV/bin/python3" ] || return 1
	local m
	for m in "$@"; do
		"$SILT_VENV/bin/python3" -c "import $m" >/dev/null 2>&1 || return 1
	done
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -uo pipefail
	if [ $# -ne 2 ]; then
		echo "usage: bash conformance/venv.sh CMD PYPI-PACKAGE" >&2
		exit 2
	fi
	if [ ! -x "$SILT_VENV/bin/$1" ]; then
		venv_install "$2" || true
	fi
	if [ ! -x "$SILT_VENV/bin/$1" ]; then
		echo "cannot install $1 (PyPI package $2) into $SILT_VENV" >&2
		exit 1
	fi
	echo "$SILT_VENV/bin/$1"
fi
