# Reader groups against a real `silt serve`: curl through the whole
# lifecycle (create, join, commit, lag, fencing, reset, delete), the CLI's
# silt read --group, positions surviving a kill -9 of the server, silt group
# lag --watch, silt top, and stream sets (the old --group spelling).
start_silt

AUTH=(-H "Authorization: Bearer $SILT_TOKEN")
code() { curl -s -o $CONF_TMP/body -w '%{http_code}' "$@"; }
G="$API/v1/tenants/acme/groups"

code "${AUTH[@]}" -d '{"name":"acme"}' "$API/v1/tenants" >/dev/null
code "${AUTH[@]}" -d '{"name":"orders","segments":2}' "$API/v1/tenants/acme/streams" >/dev/null
printf 'a1\na2\na3\na4\n' | curl -s "${AUTH[@]}" -H 'Content-Type: application/x-ndjson' --data-binary @- "$API/v1/tenants/acme/streams/orders/events?segment=0" >/dev/null
printf 'b1\nb2\n' | curl -s "${AUTH[@]}" -H 'Content-Type: application/x-ndjson' --data-binary @- "$API/v1/tenants/acme/streams/orders/events?segment=1" >/dev/null

expect_eq "curl: create group → 201" "$(code "${AUTH[@]}" -d '{"name":"billing","streams":["orders"],"start":{"kind":"head"}}' "$G")" 201
expect_eq "curl: duplicate group → 409" "$(code "${AUTH[@]}" -d '{"name":"billing","streams":["orders"]}' "$G")" 409
expect_eq "curl: group over an unknown stream → 404" "$(code "${AUTH[@]}" -d '{"name":"x","streams":["nope"]}' "$G")" 404
expect_eq "curl: position past the end → 400" "$(code "${AUTH[@]}" -d '{"name":"x","streams":["orders"],"start":{"kind":"positions","positions":[{"stream":"orders","segment":"0","offset":9}]}}' "$G")" 400
check "curl: the 400 says past its end" grep -q "past its end" $CONF_TMP/body
expect_eq "curl: unknown group → 404" "$(code "${AUTH[@]}" "$G/nope")" 404
expect_eq "curl: lag of a new group" "$(curl -s "${AUTH[@]}" "$G/billing/lag" | jq .events_behind)" 6

expect_eq "curl: join → 200" "$(code "${AUTH[@]}" -d '{"member":"r1"}' "$G/billing/members")" 200
gen=$(jq .generation $CONF_TMP/body)
expect_eq "curl: one reader holds both segments" "$(jq '.segments|length' $CONF_TMP/body)" 2
expect_eq "curl: commit → 204" "$(code "${AUTH[@]}" -d "{\"generation\":$gen,\"positions\":[{\"stream\":\"orders\",\"segment\":\"0\",\"offset\":3}]}" "$G/billing/members/r1/commit")" 204
expect_eq "curl: lag is exact after the commit" "$(curl -s "${AUTH[@]}" "$G/billing/lag" | jq '[.events_behind, .segments[0].events_behind]|@csv' -r)" "3,1"
expect_eq "curl: second reader joins → 200" "$(code "${AUTH[@]}" -d '{"member":"r2"}' "$G/billing/members")" 200
expect_eq "curl: stale generation heartbeat → 409" "$(code "${AUTH[@]}" -d "{\"generation\":$gen}" "$G/billing/members/r1/heartbeat")" 409
check "curl: the 409 says to join again" jq -e '.error.code == "rejoin" and (.error.message|test("join again"))' $CONF_TMP/body
expect_eq "curl: reset while readers are live → 409" "$(code "${AUTH[@]}" -d '{"start":{"kind":"tail"}}' "$G/billing/reset")" 409
check "curl: metrics show the group's readers" sh -c "curl -s $API/metrics | grep -q 'silt_group_readers{group=\"billing\",tenant=\"acme\"} 2'"

# kill -9: the committed position and the members are in the catalog.
kill -9 "$SILT_PID"
wait "$SILT_PID" 2>/dev/null
SILT_PID=
start_silt_in "$SILT_DATA"
AUTH=(-H "Authorization: Bearer $SILT_TOKEN")
G="$API/v1/tenants/acme/groups" # new ports
expect_eq "after kill -9: position kept" "$(curl -s "${AUTH[@]}" "$G/billing" | jq -r '[.positions[]|.offset]|@csv')" "3,0"
expect_eq "after kill -9: members kept" "$(curl -s "${AUTH[@]}" "$G/billing" | jq '.members|length')" 2
expect_eq "curl: forced reset → 200" "$(code "${AUTH[@]}" -d '{"start":{"kind":"head"},"force":true}' "$G/billing/reset")" 200

# The CLI reads the group's share and commits as it goes.
"$SILT_BIN" read acme --group billing >$CONF_TMP/read1
expect_eq "silt read --group: every event once" "$(sort $CONF_TMP/read1 | tr '\n' ' ')" "a1 a2 a3 a4 b1 b2 "
expect_eq "silt group lag: nothing behind" "$("$SILT_BIN" group lag acme/billing -o json | jq .events_behind)" 0
expect_eq "silt read --group again: nothing new" "$("$SILT_BIN" read acme --group billing | wc -l)" 0

# Pictures for people: the lag table refreshed, and silt top.
expect_eq "silt group lag --watch -n 2: two tables appended" "$("$SILT_BIN" group lag acme/billing --watch --interval 100ms -n 2 | grep -c '^total')" 2
"$SILT_BIN" top acme --once --interval 300ms -o json >$CONF_TMP/top
check "silt top --once: the stream with its 6 events, idle" jq -e '.streams[] | select(.stream == "orders") | .events == 6 and .events_per_second == 0' $CONF_TMP/top
check "silt top --once: the group, nothing behind" jq -e '.groups[] | select(.group == "billing") | .events_behind == 0' $CONF_TMP/top

# "group" means a reader group: the ACL grouping of streams is a stream
# set; --group and TENANT/group:NAME are its deprecated spellings.
"$SILT_BIN" stream create acme/web-a --set web >/dev/null
"$SILT_BIN" stream create acme/web-b --group web >/dev/null 2>$CONF_TMP/dep
check "silt stream create --group: one deprecation line on stderr" sh -c "[ \$(wc -l <$CONF_TMP/dep) -eq 1 ] && grep -q 'use --set web' $CONF_TMP/dep"
expect_eq "curl: --group web made a stream of set web" "$(curl -s "${AUTH[@]}" "$API/v1/tenants/acme/streams/web-b" | jq -r .config.set)" web
expect_eq "silt grant on the old spelling is stored as set:" "$("$SILT_BIN" grant anonymous read acme/group:web -o json | jq -r .resource)" acme/set:web
expect_eq "curl: anonymous reads a stream of the set → 200" "$(code "$API/v1/tenants/acme/streams/web-a")" 200
expect_eq "curl: anonymous reads a stream outside it → 401" "$(code "$API/v1/tenants/acme/streams/orders")" 401
for s in web-a web-b; do "$SILT_BIN" stream delete acme/$s --yes >/dev/null; done

# A group over a deleted stream: 409 with a message, and only delete works.
code "${AUTH[@]}" -X DELETE "$API/v1/tenants/acme/streams/orders" >/dev/null
expect_eq "curl: join a group over a deleted stream → 409" "$(code "${AUTH[@]}" -d '{}' "$G/billing/members")" 409
check "curl: the 409 says the stream was deleted" grep -q "was deleted" $CONF_TMP/body
expect_eq "curl: tenant with a group is not deleted → 409" "$(code "${AUTH[@]}" -X DELETE "$API/v1/tenants/acme")" 409
expect_eq "curl: delete the group → 204" "$(code "${AUTH[@]}" -X DELETE "$G/billing")" 204
expect_eq "curl: then the tenant → 204" "$(code "${AUTH[@]}" -X DELETE "$API/v1/tenants/acme")" 204
