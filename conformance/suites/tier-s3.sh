# The s3 tier-2 backend against a real, independent S3 server (moto_server):
# silt tiers into a bucket there, and the objects, listed and fetched with the
# aws CLI straight from moto, must be byte-identical to the native read of
# each segment and to what silt's own S3 head serves.
need_pip moto_server 'moto[server]' || { fail "tier-s3: moto_server (PyPI moto[server]) is not available"; return; }
need_pip aws awscli || { fail "tier-s3: aws CLI (PyPI awscli) is not available"; return; }

read -r MOTO_PORT <<<"$(free_ports 1)"
MOTO="http://127.0.0.1:$MOTO_PORT"
MOTO_LOG=$(mktemp /tmp/silt-moto.XXXXXX)
moto_server -H 127.0.0.1 -p "$MOTO_PORT" >"$MOTO_LOG" 2>&1 &
MOTO_PID=$!
stop_moto() {
	if [ -n "${MOTO_PID:-}" ]; then
		kill "$MOTO_PID" 2>/dev/null || true
		wait "$MOTO_PID" 2>/dev/null || true
		MOTO_PID=
	fi
	rm -f "$MOTO_LOG"
}
# run.sh's EXIT trap stops silt; stop moto too if the run is cut short.
trap 'stop_moto; on_exit' EXIT
for _ in $(seq 1 100); do
	curl -fsS "$MOTO/" >/dev/null 2>&1 && break
	sleep 0.1
done

# The aws CLI talks to moto with moto's dummy keys; silt's S3 head gets its own.
MOTO_AWS=(env AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
	AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null aws --endpoint-url "$MOTO")
if ! curl -fsS "$MOTO/" >/dev/null 2>&1; then
	fail "tier-s3: moto_server did not start"
	sed 's/^/       /' "$MOTO_LOG" | head -20
elif ! check "tier-s3: create bucket in moto" "${MOTO_AWS[@]}" s3 mb s3://lake; then
	:
elif ! start_silt --tiering.backend s3 --tiering.s3.endpoint "$MOTO" --tiering.s3.bucket lake \
	--tiering.s3.prefix silt --tiering.s3.path_style \
	--tiering.s3.access_key_id test --tiering.s3.secret_access_key test \
	--tiering.max_lag 400ms --tiering.interval 100ms; then
	fail "tier-s3: silt starts with the s3 backend"
else
	pass "tier-s3: silt starts with the s3 backend"
	"$SILT_BIN" tenant create acme >/dev/null
	"$SILT_BIN" stream create acme/clicks --segments 2 >/dev/null
	seq 1 4000 | sed 's/.*/{"n":&,"pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}/' >/tmp/silt-tier-s3-events
	"$SILT_BIN" append acme/clicks --file /tmp/silt-tier-s3-events 2>/dev/null

	# Wait until every event is in moto (bounded by the lag ceiling).
	for _ in $(seq 1 50); do
		rm -rf "$SILT_DATA/moto"
		n=$("${MOTO_AWS[@]}" s3 cp --recursive s3://lake/silt/acme/clicks/ "$SILT_DATA/moto" --quiet 2>/dev/null &&
			cat "$SILT_DATA"/moto/segment=*/* | wc -l)
		[ "${n:-0}" -ge 4000 ] && break
		sleep 0.2
	done
	expect_eq "tier-s3: every event reached moto" "$(cat "$SILT_DATA"/moto/segment=*/* 2>/dev/null | sort | md5sum)" "$(sort /tmp/silt-tier-s3-events | md5sum)"
	"${MOTO_AWS[@]}" s3 ls --recursive s3://lake/ | awk '{print $4}' >"$SILT_DATA/moto-keys"
	check "tier-s3: moto holds objects" test -s "$SILT_DATA/moto-keys"
	expect_eq "tier-s3: keys are <prefix>/<tenant>/<stream>/segment=<id>/<chunk> and the manifest" \
		"$(grep -Ev '^silt/acme/clicks/(segment=[01]/[0-9]{20}-[0-9]{20}\.txt|_manifest\.json)$' "$SILT_DATA/moto-keys")" ""
	# The manifest in the bucket lists every chunk object (it is rewritten
	# at the first scan after the stream stops sealing).
	chunks=$(grep -c '/segment=' "$SILT_DATA/moto-keys")
	for _ in $(seq 50); do
		listed=$("${MOTO_AWS[@]}" s3 cp s3://lake/silt/acme/clicks/_manifest.json - 2>/dev/null | jq '[.segments[].chunks | length] | add')
		[ "${listed:-0}" = "$chunks" ] && break
		sleep 0.2
	done
	expect_eq "tier-s3: the manifest in moto lists every chunk object" "${listed:-none}" "$chunks"

	# silt's own S3 head, reading through the backend from moto.
	read -r AK SK < <("$SILT_BIN" s3-key create root -o json | jq -r '"\(.access_key_id) \(.secret_access_key)"')
	SILT_AWS=(env AWS_ACCESS_KEY_ID="$AK" AWS_SECRET_ACCESS_KEY="$SK" AWS_DEFAULT_REGION=us-east-1
		AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null aws --endpoint-url "$S3")
	"${SILT_AWS[@]}" s3 cp --recursive s3://acme/clicks/ "$SILT_DATA/head" --quiet 2>/dev/null
	for seg in 0 1; do
		"$SILT_BIN" read acme/clicks --segment "$seg" --from 0 >"$SILT_DATA/native$seg" 2>/dev/null
		cat "$SILT_DATA"/moto/segment=$seg/* >"$SILT_DATA/moto$seg" 2>/dev/null
		cat "$SILT_DATA"/head/segment=$seg/* >"$SILT_DATA/head$seg" 2>/dev/null
		check "tier-s3: segment $seg objects in moto = native read" cmp "$SILT_DATA/native$seg" "$SILT_DATA/moto$seg"
		check "tier-s3: segment $seg via silt's S3 head = objects in moto" cmp "$SILT_DATA/head$seg" "$SILT_DATA/moto$seg"
		expect_eq "tier-s3: segment $seg has the same chunk names in moto and the S3 head" \
			"$(ls "$SILT_DATA/head/segment=$seg" 2>/dev/null)" "$(ls "$SILT_DATA/moto/segment=$seg" 2>/dev/null)"
	done
	key=$(ls "$SILT_DATA/moto/segment=0" | head -1)
	"${SILT_AWS[@]}" s3api get-object --bucket acme --key "clicks/segment=0/$key" --range bytes=5-99 "$SILT_DATA/range" >/dev/null
	expect_eq "tier-s3: ranged GET through the S3 head" "$(md5sum <"$SILT_DATA/range")" "$(head -c 100 "$SILT_DATA/moto/segment=0/$key" | tail -c 95 | md5sum)"
	expect_eq "tier-s3: describe shows no tiering error" \
		"$("$SILT_BIN" stream describe acme/clicks -o json 2>/dev/null | jq -r '[.. | .last_error? // empty] | length')" 0
	stop_silt
fi

# An unreachable endpoint does not stop silt from starting; the failure
# shows in describe, and tier 1 keeps the events.
if start_silt --tiering.backend s3 --tiering.s3.endpoint "http://127.0.0.1:1" --tiering.s3.bucket lake \
	--tiering.s3.path_style --tiering.s3.access_key_id test --tiering.s3.secret_access_key test \
	--tiering.max_lag 400ms --tiering.interval 100ms; then
	pass "tier-s3: silt starts while the s3 endpoint is unreachable"
	"$SILT_BIN" tenant create acme >/dev/null
	"$SILT_BIN" stream create acme/down >/dev/null
	echo '{"n":1}' | "$SILT_BIN" append acme/down 2>/dev/null
	err=
	for _ in $(seq 1 30); do
		err=$("$SILT_BIN" stream describe acme/down -o json 2>/dev/null | jq -r '[.. | .last_error? // empty] | join(" ")')
		[ -n "$err" ] && break
		sleep 0.2
	done
	check "tier-s3: describe reports the unreachable endpoint" grep -q '127.0.0.1:1' <<<"$err"
	expect_eq "tier-s3: tier 1 still serves the event" "$("$SILT_BIN" read acme/down --from 0 2>/dev/null)" '{"n":1}'
else
	fail "tier-s3: silt starts while the s3 endpoint is unreachable"
fi
stop_silt

stop_moto
trap on_exit EXIT
