#!/usr/bin/env bash
# Runs every conformance suite against a real `silt serve` and prints one
# closing line "N passed, N failed". Suites are conformance/suites/*.sh; each
# sources lib.sh, starts the server it needs and reports through pass/fail.
set -uo pipefail
cd "$(dirname "$0")/.."
source conformance/lib.sh
# Scratch files of this run; a unique directory keeps concurrent runs apart.
CONF_TMP=$(mktemp -d /tmp/silt-conformance.XXXXXX)
export CONF_TMP
trap 'stop_silt; rm -rf "$CONF_TMP"' EXIT

need curl curl || exit 1
need jq jq || exit 1

for suite in conformance/suites/*.sh; do
	echo "== $(basename "$suite" .sh)"
	source "$suite"
	stop_silt
done

echo "conformance: $PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
