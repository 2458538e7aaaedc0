# Native API hardening, replayed with curl and the silt CLI against a real
# server: tokens in the insecure development mode, writer ids that belong
# to their principal, names checked before access, and appends that can
# never fit answered 413 rather than 503.
code() { curl -s -o "$CONF_TMP/body" -D "$CONF_TMP/headers" -w '%{http_code}' "$@"; }
errcode() { jq -r .error.code "$CONF_TMP/body"; }

# --- --auth.insecure_dev: only requests without a credential are free ---
start_silt --auth.insecure_dev
expect_eq "insecure: anonymous creates a tenant → 201" "$(code -d '{"name":"acme"}' "$API/v1/tenants")" 201
expect_eq "insecure: anonymous creates a principal → 201" "$(code -d '{"name":"viewer"}' "$API/v1/principals")" 201
expect_eq "insecure: anonymous grants read → 201" "$(code -d '{"principal":"viewer","action":"read","resource":"acme"}' "$API/v1/grants")" 201
code -X POST "$API/v1/principals/viewer/tokens" >/dev/null
VIEWER=$(jq -r .token "$CONF_TMP/body")
VAUTH=(-H "Authorization: Bearer $VIEWER")
expect_eq "insecure: read-only token grants itself admin * → 403" \
	"$(code "${VAUTH[@]}" -d '{"principal":"viewer","action":"admin","resource":"*"}' "$API/v1/grants")" 403
expect_eq "insecure: read-only token creates a tenant → 403" "$(code "${VAUTH[@]}" -d '{"name":"other"}' "$API/v1/tenants")" 403
expect_eq "insecure: read-only token reads its tenant → 200" "$(code "${VAUTH[@]}" "$API/v1/tenants/acme")" 200
expect_eq "insecure: unknown token → 401" "$(code -H 'Authorization: Bearer silt_notatoken' "$API/v1/tenants/acme")" 401
expect_eq "insecure: unknown token grants admin * → 401" \
	"$(code -H 'Authorization: Bearer silt_notatoken' -d '{"principal":"viewer","action":"admin","resource":"*"}' "$API/v1/grants")" 401
check "insecure: cli with the read-only token cannot grant admin" \
	sh -c "! SILT_TOKEN='$VIEWER' '$SILT_BIN' grant viewer admin '*'"
got=$(curl -s "$API/v1/grants?principal=viewer" | jq -r '[.grants[].action] | join(",")')
expect_eq "insecure: the viewer holds only its read grant" "$got" "read"
# The other heads: unsigned or anonymous requests see everything, a
# presented credential acts as its principal.
expect_eq "insecure: anonymous WebHDFS lists acme → 200" "$(code "$HDFS/webhdfs/v1/acme?op=LISTSTATUS")" 200
code -d '{"name":"nobody"}' "$API/v1/principals" >/dev/null
code -X POST "$API/v1/principals/nobody/tokens" >/dev/null
NOBODY=$(jq -r .token "$CONF_TMP/body")
expect_eq "insecure: a token without grants on WebHDFS → 403" "$(code -H "Authorization: Bearer $NOBODY" "$HDFS/webhdfs/v1/acme?op=LISTSTATUS")" 403
code -X POST "$API/v1/principals/nobody/s3-keys" >/dev/null
AK=$(jq -r .access_key_id "$CONF_TMP/body")
SK=$(jq -r .secret_access_key "$CONF_TMP/body")
expect_eq "insecure: unsigned S3 list of acme → 200" "$(code "$S3/acme?list-type=2")" 200
expect_eq "insecure: S3 signed by a principal without grants → 403" \
	"$(code --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AK:$SK" \
		-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" "$S3/acme?list-type=2")" 403
check "insecure: … as S3's AccessDenied" grep -q "<Code>AccessDenied</Code>" "$CONF_TMP/body"
stop_silt

# --- the default mode ---
start_silt
AUTH=(-H "Authorization: Bearer $SILT_TOKEN")
curl -s "${AUTH[@]}" -d '{"name":"acme"}' "$API/v1/tenants" >/dev/null
curl -s "${AUTH[@]}" -d '{"name":"logs","segments":2}' "$API/v1/tenants/acme/streams" >/dev/null
token_for() { # PRINCIPAL GRANT...: create it with the grants, print a token
	local p=$1
	shift
	"$SILT_BIN" principal create "$p" >/dev/null 2>&1
	for g in "$@"; do "$SILT_BIN" grant "$p" ${g%%:*} "${g#*:}" >/dev/null 2>&1; done
	"$SILT_BIN" token create "$p" 2>/dev/null
}
ALICE=$(token_for alice append:acme/logs)
MALLORY=$(token_for mallory append:acme/logs)
STRANGER=$(token_for stranger)

# Writer ids belong to the principal that first used them on the stream.
send() { # TOKEN SEGMENT WRITER SEQ BODY
	code -H "Authorization: Bearer $1" -H "Silt-Writer-Id: $3" -H "Silt-Seq: $4" --data-binary "$5" \
		"$API/v1/tenants/acme/streams/logs/events?segment=$2"
}
expect_eq "writer: alice's batch → 200" "$(send "$ALICE" 0 loader-1 7 alice-7)" 200
for c in "0 7" "0 8" "0 1" "1 1"; do
	read -r seg seq <<<"$c"
	expect_eq "writer: mallory with alice's id (segment $seg, seq $seq) → 409" "$(send "$MALLORY" "$seg" loader-1 "$seq" mallory)" 409
	expect_eq "writer: … code writer_conflict" "$(errcode)" writer_conflict
done
check "writer: the 409 does not name the owner" sh -c "! grep -q alice '$CONF_TMP/body'"
expect_eq "writer: alice's retry → 200" "$(send "$ALICE" 0 loader-1 7 alice-7)" 200
check "writer: alice's retry is her duplicate" jq -e '.duplicate == true and .first_offset == 0' "$CONF_TMP/body"
got=$(curl -s "${AUTH[@]}" "$API/v1/tenants/acme/streams/logs/events?format=raw" | sort | tr '\n' ' ')
expect_eq "writer: only alice's event is stored" "$got" "alice-7 "

# Names are checked before access: the same 400 for every caller.
for who in root stranger anonymous; do
	case $who in
	root) H=("${AUTH[@]}") ;;
	stranger) H=(-H "Authorization: Bearer $STRANGER") ;;
	anonymous) H=() ;;
	esac
	for path in "/v1/tenants/ac%2fme" "/v1/tenants/ac%2fme/streams/logs/events" "/v1/tenants/acme/streams/lo%2Fgs" \
		"/v1/tenants/acme/streams/lo%2fgs/events"; do
		expect_eq "names: GET $path as $who → 400" "$(code "${H[@]}" "$API$path")" 400
	done
	expect_eq "names: append to ac%2fme as $who → 400" "$(code "${H[@]}" --data-binary x "$API/v1/tenants/ac%2fme/streams/logs/events")" 400
	check "names: … says invalid name" grep -q "invalid name" "$CONF_TMP/body"
done
"$SILT_BIN" stream create 'acme/lo%2fgs' >/dev/null 2>"$CONF_TMP/cli.err"
check "names: cli stream create acme/lo%2fgs is refused as an invalid name" grep -q "400 invalid_argument: invalid name" "$CONF_TMP/cli.err"
"$SILT_BIN" stream describe 'acme/lo%2fgs' >/dev/null 2>"$CONF_TMP/cli.err"
check "names: cli stream describe acme/lo%2fgs is refused as an invalid name" grep -q "invalid name" "$CONF_TMP/cli.err"

# Appends that can never fit: 413 naming the limit, no Retry-After.
yes a | head -n 2000000 >"$CONF_TMP/tiny"
expect_eq "limits: 2 million one-byte events (4 MB) → 413" \
	"$(code "${AUTH[@]}" -H 'Content-Type: application/x-ndjson' --data-binary @"$CONF_TMP/tiny" "$API/v1/tenants/acme/streams/logs/events")" 413
check "limits: the 413 names core.limits.max_batch_events" grep -q "core.limits.max_batch_events is 100000" "$CONF_TMP/body"
check "limits: the 413 has no Retry-After" sh -c "! grep -qi '^retry-after' '$CONF_TMP/headers'"
head -n 1000 "$CONF_TMP/tiny" >"$CONF_TMP/small"
expect_eq "limits: 1000 of them → 200" \
	"$(code "${AUTH[@]}" -H 'Content-Type: application/x-ndjson' --data-binary @"$CONF_TMP/small" "$API/v1/tenants/acme/streams/logs/events")" 200
check "cli: append of the 2 million events goes through in batches" "$SILT_BIN" append acme/logs --file "$CONF_TMP/tiny"
