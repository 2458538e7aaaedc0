# Native API and CLI against a real `silt serve`: curl (an HTTP client nobody
# here wrote) and the silt CLI, checking bodies, status codes and errors.
start_silt

AUTH=(-H "Authorization: Bearer $SILT_TOKEN")
code() { curl -s -o $CONF_TMP/body -w '%{http_code}' "$@"; }

expect_eq "curl: create tenant → 201" "$(code "${AUTH[@]}" -d '{"name":"acme"}' "$API/v1/tenants")" 201
expect_eq "curl: duplicate tenant → 409" "$(code "${AUTH[@]}" -d '{"name":"acme"}' "$API/v1/tenants")" 409
expect_eq "curl: invalid tenant name → 400" "$(code "${AUTH[@]}" -d '{"name":"Bad_Name"}' "$API/v1/tenants")" 400
check "curl: the 400 says the rule" grep -q "lowercase" $CONF_TMP/body
expect_eq "curl: create stream → 201" "$(code "${AUTH[@]}" -d '{"name":"clicks","segments":3,"metadata":{"team":"web"}}' "$API/v1/tenants/acme/streams")" 201
expect_eq "curl: create framed stream → 201" "$(code "${AUTH[@]}" -d '{"name":"bin","encoding":"framed"}' "$API/v1/tenants/acme/streams")" 201

expect_eq "curl: append one event → 200" "$(code "${AUTH[@]}" --data-binary '{"n":0}' "$API/v1/tenants/acme/streams/clicks/events?key=k1")" 200
check "curl: append answers the offset" jq -e '.first_offset == 0 and .count == 1' $CONF_TMP/body
printf '{"n":1}\n{"n":2}\n{"n":3}\n' >$CONF_TMP/batch
expect_eq "curl: append NDJSON batch → 200" "$(code "${AUTH[@]}" -H 'Content-Type: application/x-ndjson' --data-binary @$CONF_TMP/batch "$API/v1/tenants/acme/streams/clicks/events?key=k1")" 200
check "curl: batch count 3" jq -e '.count == 3 and .first_offset == 1' $CONF_TMP/body
expect_eq "curl: newline in a lines event → 400" "$(code "${AUTH[@]}" -H 'Content-Type: text/plain' --data-binary $'a\nb' "$API/v1/tenants/acme/streams/clicks/events")" 400
expect_eq "curl: unknown stream → 404" "$(code "${AUTH[@]}" --data-binary 'x' "$API/v1/tenants/acme/streams/nope/events")" 404
check "curl: the 404 names the stream" grep -q nope $CONF_TMP/body
head -c 2000000 /dev/zero | tr '\0' 'a' >$CONF_TMP/big
expect_eq "curl: oversize event → 413" "$(code "${AUTH[@]}" -H 'Content-Type: text/plain' --data-binary @$CONF_TMP/big "$API/v1/tenants/acme/streams/clicks/events")" 413
expect_eq "curl: no token → 401" "$(code --data-binary 'x' "$API/v1/tenants/acme/streams/clicks/events")" 401
expect_eq "curl: bad token → 401" "$(code -H 'Authorization: Bearer silt_nope' "$API/v1/tenants")" 401

# Idempotent retry: same writer id and sequence stores once.
for _ in 1 2; do
	code "${AUTH[@]}" -H 'Silt-Writer-Id: w1' -H 'Silt-Seq: 1' --data-binary '{"n":"once"}' "$API/v1/tenants/acme/streams/clicks/events?key=k2" >/dev/null
done
check "curl: retry flagged duplicate" jq -e '.duplicate == true' $CONF_TMP/body

# Framed batch: two events, "ab" and "xyz".
printf '\0\0\0\2ab\0\0\0\3xyz' >$CONF_TMP/framed
expect_eq "curl: framed batch → 200" "$(code "${AUTH[@]}" -H 'Content-Type: application/vnd.silt.framed' --data-binary @$CONF_TMP/framed "$API/v1/tenants/acme/streams/bin/events")" 200
curl -s "${AUTH[@]}" "$API/v1/tenants/acme/streams/bin/events?format=raw" >$CONF_TMP/framed-back
check "curl: framed read is byte-identical" cmp $CONF_TMP/framed $CONF_TMP/framed-back

# Reads: raw lines from the beginning; ndjson with cursor; from a position.
got=$(curl -s "${AUTH[@]}" "$API/v1/tenants/acme/streams/clicks/events?format=raw" | grep -c '"n"')
expect_eq "curl: raw read returns all 5 events" "$got" 5
curl -s "${AUTH[@]}" "$API/v1/tenants/acme/streams/clicks/events?max=2" >$CONF_TMP/nd
check "curl: ndjson lines carry data and a next cursor" jq -se '(.[0].data|@base64d|length > 0) and (.[-1].next_cursor|length > 0)' $CONF_TMP/nd
read -r seg off < <(curl -s "${AUTH[@]}" -H 'Content-Type: text/plain' --data-binary 'marker' "$API/v1/tenants/acme/streams/clicks/events?key=k1" | jq -r '"\(.segment) \(.first_offset)"')
got=$(curl -s "${AUTH[@]}" "$API/v1/tenants/acme/streams/clicks/events?format=raw&segment=$seg&from=$off")
expect_eq "curl: read from a position" "$got" "marker"

# Follow: a streaming reader sees an event appended after it started.
(curl -sN "${AUTH[@]}" "$API/v1/tenants/acme/streams/clicks/events?follow=true&cursor=end&format=raw" >$CONF_TMP/follow &
	echo $! >$CONF_TMP/follow.pid)
sleep 0.5
curl -s "${AUTH[@]}" -H 'Content-Type: text/plain' --data-binary 'live-event' "$API/v1/tenants/acme/streams/clicks/events" >/dev/null
for _ in $(seq 1 30); do grep -q live-event $CONF_TMP/follow && break; sleep 0.1; done
kill "$(cat $CONF_TMP/follow.pid)" 2>/dev/null
check "curl: follow delivers a new event" grep -q live-event $CONF_TMP/follow

expect_eq "curl: openapi served" "$(code "$API/openapi.yaml")" 200
check "curl: metrics served" sh -c "curl -s $API/metrics | grep -q silt_"

# The CLI, through the Go SDK.
check "cli: stream create" "$SILT_BIN" stream create acme/cli --segments 2
seq 1 2000 >$CONF_TMP/seq
check "cli: append a file" "$SILT_BIN" append acme/cli --file $CONF_TMP/seq
got=$("$SILT_BIN" read acme/cli | sort -n | md5sum)
expect_eq "cli: read returns every appended line" "$got" "$(sort -n $CONF_TMP/seq | md5sum)"
expect_eq "cli: read --max" "$("$SILT_BIN" read acme/cli --max 7 2>/dev/null | wc -l)" 7
check "cli: describe" sh -c "'$SILT_BIN' stream describe acme/cli | grep -q SEGMENT"
("$SILT_BIN" tail acme/cli >$CONF_TMP/tail 2>&1 &
	echo $! >$CONF_TMP/tail.pid)
sleep 0.5
echo tail-me | "$SILT_BIN" append acme/cli 2>/dev/null
for _ in $(seq 1 30); do grep -q tail-me $CONF_TMP/tail && break; sleep 0.1; done
kill "$(cat $CONF_TMP/tail.pid)" 2>/dev/null
check "cli: tail follows new events" grep -q tail-me $CONF_TMP/tail

# ACL through the CLI: a reader may read but not append or administer.
check "cli: principal create" "$SILT_BIN" principal create reader
READER=$("$SILT_BIN" token create reader --label conformance 2>/dev/null)
check "cli: grant read on a pattern" "$SILT_BIN" grant reader read 'acme/cl*'
expect_eq "cli: whoami as reader" "$(SILT_TOKEN=$READER "$SILT_BIN" whoami)" reader
check "cli: reader can read" sh -c "SILT_TOKEN=$READER '$SILT_BIN' read acme/cli --max 1"
if echo x | SILT_TOKEN=$READER "$SILT_BIN" append acme/cli 2>$CONF_TMP/denied; then fail "cli: reader append denied"; else
	check "cli: reader append denied with 403" grep -qi "denied\|forbidden" $CONF_TMP/denied
fi
expect_eq "curl: reader cannot read other streams → 403" \
	"$(code -H "Authorization: Bearer $READER" "$API/v1/tenants/acme/streams/bin/events")" 403

# The CLI's habits: client flags anywhere, help on stdout, one -o.
check "cli: client flags before the verb" sh -c "'$SILT_BIN' --server '$API' --token '$SILT_TOKEN' -o json tenant list | jq -e 'map(.name) | index(\"acme\")'"
check "cli: client flags after the action" sh -c "'$SILT_BIN' tenant list -o json --server '$API' | jq -e 'map(.name) | index(\"acme\")'"
check "cli: a verb's --help is on stdout, with examples" sh -c "'$SILT_BIN' stream create --help 2>/dev/null | grep -q '^Examples:'"
check "cli: serve --help groups its flags by section" sh -c "'$SILT_BIN' serve --help | grep -q '^Tiering and tier 2 (tiering.\*):'"
"$SILT_BIN" tenant >/dev/null 2>&1
expect_eq "cli: a verb group without an action exits 2" "$?" 2
check "cli: version names the commit" sh -c "'$SILT_BIN' version -o json | jq -e '.commit | length > 0'"
check "cli: bash completion loads" bash -c "source <('$SILT_BIN' completion bash) && complete -p silt"
"$SILT_BIN" read acme/bin -o raw >$CONF_TMP/framed-cli 2>/dev/null
check "cli: read -o raw of a framed stream is byte-identical" cmp $CONF_TMP/framed $CONF_TMP/framed-cli
"$SILT_BIN" read acme/nope >/dev/null 2>$CONF_TMP/nope
expect_eq "cli: a missing stream is said once" "$(grep -o 'not found' $CONF_TMP/nope | wc -l)" 1
check "cli: stream delete --yes" "$SILT_BIN" stream delete acme/cli --yes
if "$SILT_BIN" stream describe acme/cli >/dev/null 2>&1; then fail "cli: the deleted stream is gone"; else pass "cli: the deleted stream is gone"; fi

# silt serve --dev-tls prints a CLI command that trusts its CA; that
# command, with the client flags before the verb, works as printed.
TLSD=$(mktemp -d /tmp/silt-devtls.XXXXXX)
read -r TLS_API TLS_S3 TLS_NFS TLS_HDFS <<<"$(free_ports 4)"
(cd "$TLSD" && exec "$SILT_BIN" serve --dev-tls --api.listen 127.0.0.1:$TLS_API --s3.listen 127.0.0.1:$TLS_S3 \
	--nfs.listen 127.0.0.1:$TLS_NFS --webhdfs.listen 127.0.0.1:$TLS_HDFS --kafka.listen 127.0.0.1:0 >"$TLSD/log" 2>&1) &
TLS_PID=$!
for _ in $(seq 1 100); do
	[ -s "$TLSD/silt-data/root.token" ] && grep -q 'silt serving' "$TLSD/log" && break
	sleep 0.1
done
printed=$(grep -o 'silt --ca-file [^ ]*' "$TLSD/log" | head -1)
check "cli: serve --dev-tls prints a silt --ca-file command" test -n "$printed"
check "cli: the printed --ca-file command works, before the verb, from any directory" \
	sh -c "cd / && SILT_SERVER= SILT_TOKEN= '$SILT_BIN' ${printed#silt } --server https://127.0.0.1:$TLS_API --token-file '$TLSD/silt-data/root.token' tenant list"
kill "$TLS_PID" 2>/dev/null
wait "$TLS_PID" 2>/dev/null
rm -rf "$TLSD"
