# Listings: paging parameters that can never be valid get the protocol's
# 400, page tokens are positions that grant nothing and tell no hidden
# name, and a principal granted one stream of a tenant pages through that
# stream alone. Clients: curl against the native API and the S3 head.
lcode() { curl -s -o "$CONF_TMP/lbody" -w '%{http_code}' "$@"; }
b64url() { printf %s "$1" | base64 | tr '+/' '-_' | tr -d '='; }

start_silt || { fail "security/listings: silt did not start"; return; }
"$SILT_BIN" tenant create crowd >/dev/null
"$SILT_BIN" tenant create quiet >/dev/null
for i in $(seq -w 0 11); do "$SILT_BIN" stream create "crowd/dev-$i" >/dev/null; done
"$SILT_BIN" principal create dev07 >/dev/null
"$SILT_BIN" grant dev07 read crowd/dev-07 >/dev/null
ROOT=(-H "Authorization: Bearer $SILT_TOKEN")
lcode "${ROOT[@]}" -X POST "$API/v1/principals/dev07/tokens" >/dev/null
DEV=(-H "Authorization: Bearer $(jq -r .token "$CONF_TMP/lbody")")

# list_all AUTH... -- PATH: every name of a paginated listing, one a line,
# then "requests=N".
list_all() {
	local path=${*: -1} tok="" n=0 sep
	while :; do
		sep='?'; [[ $path == *\?* ]] && sep='&'
		curl -s "${@:1:$#-1}" "$API$path${tok:+${sep}page_token=$tok}" >"$CONF_TMP/lpage"
		n=$((n + 1))
		jq -r '(.streams // .tenants)[].name' "$CONF_TMP/lpage"
		tok=$(jq -r '.next_page_token // empty' "$CONF_TMP/lpage")
		[ -z "$tok" ] || [ $n -ge 50 ] && break
	done
	echo "requests=$n"
}

expect_eq "listings: root pages through 12 streams by 5" \
	"$(list_all "${ROOT[@]}" -- "/v1/tenants/crowd/streams?limit=5" | tr '\n' ' ')" \
	"dev-00 dev-01 dev-02 dev-03 dev-04 dev-05 dev-06 dev-07 dev-08 dev-09 dev-10 dev-11 requests=3 "
expect_eq "listings: a principal granted one stream pages through it alone" \
	"$(list_all "${DEV[@]}" -- "/v1/tenants/crowd/streams?limit=1" | tr '\n' ' ')" "dev-07 requests=1 "
expect_eq "listings: its tenant list shows its tenant alone" \
	"$(list_all "${DEV[@]}" -- "/v1/tenants?limit=1" | tr '\n' ' ')" "crowd requests=1 "
expect_eq "listings: a token forged from another stream's name shows nothing more" \
	"$(curl -s "${DEV[@]}" "$API/v1/tenants/crowd/streams?page_token=$(b64url dev-03)" | jq -r '[.streams[].name] | join(",")')" "dev-07"
for bad in "page_token=%25%25" "page_token=~AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" "page_token=$(b64url '../x')" "limit=0" "limit=1001" "limit=ten"; do
	expect_eq "listings: streams?$bad → 400 invalid_argument" \
		"$(lcode "${ROOT[@]}" "$API/v1/tenants/crowd/streams?$bad") $(jq -r .error.code "$CONF_TMP/lbody")" "400 invalid_argument"
done

# S3 ListBuckets pages as S3 does, and shows anonymous its tenant alone.
"$SILT_BIN" grant anonymous read crowd/dev-03 >/dev/null
curl -s "$S3/?max-buckets=1" >"$CONF_TMP/lbuckets"
expect_eq "s3: anonymous ListBuckets max-buckets=1 shows its tenant alone, no token" \
	"$(grep -o '<Name>[^<]*</Name>' "$CONF_TMP/lbuckets" | tr '\n' ' ')$(grep -c ContinuationToken "$CONF_TMP/lbuckets")" "<Name>crowd</Name> 0"
for bad in "max-buckets=0" "max-buckets=10001" "max-buckets=x" "continuation-token=%21"; do
	expect_eq "s3: ListBuckets $bad → 400 InvalidArgument" \
		"$(lcode "$S3/?$bad") $(sed -n 's:.*<Code>\([^<]*\)</Code>.*:\1:p' "$CONF_TMP/lbody")" "400 InvalidArgument"
done
