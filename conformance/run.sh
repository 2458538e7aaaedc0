#!/usr/bin/env bash
# Runs every conformance suite against a real `silt serve` and prints one
# closing line "N passed, N failed". Suites are conformance/suites/*.sh; each
# sources lib.sh, starts the server it needs and reports through pass/fail.
# Arguments name suites to run (e.g. `conformance/run.sh s3 nfs`); none runs all.
set -uo pipefail
cd "$(dirname "$0")/.."
source conformance/lib.sh
# Scratch files of this run; a unique directory keeps concurrent runs apart.
CONF_TMP=$(mktemp -d /tmp/silt-conformance.XXXXXX)
export CONF_TMP
# on_exit is the run's cleanup; a suite that starts more servers chains
# onto it (trap 'stop_x; on_exit' EXIT) and restores it when done.
on_exit() { stop_silt; rm -rf "$CONF_TMP"; }
trap on_exit EXIT

need curl curl || exit 1
need jq jq || exit 1

suites=(conformance/suites/*.sh)
if [ $# -gt 0 ]; then
	suites=()
	for name in "$@"; do
		[ -f "conformance/suites/$name.sh" ] || { echo "no suite conformance/suites/$name.sh" >&2; exit 2; }
		suites+=("conformance/suites/$name.sh")
	done
fi
for suite in "${suites[@]}"; do
	echo "== $(basename "$suite" .sh)"
	source "$suite"
	stop_silt
done

echo "conformance: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
