# S3 head: requests that can never succeed get the 4xx S3 gives, saying why,
# and a missing bucket is only told apart from a forbidden one to those who
# may see a tenant of that name. Clients: curl (anonymous and presigned) and
# the aws CLI.
need_pip aws awscli || { fail "security/s3: aws CLI (PyPI awscli) is not available"; return; }

start_silt --tiering.max_lag 400ms --tiering.interval 100ms || { fail "security/s3: silt did not start"; return; }
"$SILT_BIN" tenant create pubdata >/dev/null
"$SILT_BIN" tenant create private >/dev/null
"$SILT_BIN" stream create pubdata/events >/dev/null
"$SILT_BIN" stream create private/events >/dev/null
seq 1 200 | sed 's/.*/{"n":&}/' >"$CONF_TMP/sec-s3-events"
"$SILT_BIN" append pubdata/events --file "$CONF_TMP/sec-s3-events" 2>/dev/null
"$SILT_BIN" append private/events --file "$CONF_TMP/sec-s3-events" 2>/dev/null
"$SILT_BIN" grant anonymous read pubdata >/dev/null
"$SILT_BIN" principal create reader >/dev/null
"$SILT_BIN" grant reader read private >/dev/null
read -r SEC_AK SEC_SK < <("$SILT_BIN" s3-key create reader -o json | jq -r '"\(.access_key_id) \(.secret_access_key)"')
SEC_AWS_CONFIG=$SILT_DATA/aws-config-sec
printf '[default]\ns3 =\n    signature_version = s3v4\n    addressing_style = path\n' >"$SEC_AWS_CONFIG"
# aws_as AK SK ARGS...: the aws CLI with that access key.
aws_as() {
	env AWS_ACCESS_KEY_ID="$1" AWS_SECRET_ACCESS_KEY="$2" AWS_DEFAULT_REGION=us-east-1 \
		AWS_CONFIG_FILE="$SEC_AWS_CONFIG" AWS_SHARED_CREDENTIALS_FILE=/dev/null aws --endpoint-url "$S3" "${@:3}"
}
SEC_AWS=(aws_as "$SEC_AK" "$SEC_SK")

# The first chunk of each stream, once tiered (bounded by the lag ceiling).
for _ in $(seq 1 50); do
	pubkey=$(curl -s "$S3/pubdata?list-type=2&prefix=events/segment%3D0/" | sed -n 's:.*<Key>\([^<]*\)</Key>.*:\1:p' | head -1)
	privkey=$("${SEC_AWS[@]}" s3api list-objects-v2 --bucket private --prefix events/segment=0/ --query 'Contents[0].Key' --output text 2>/dev/null)
	[ -n "$pubkey" ] && [ -n "$privkey" ] && [ "$privkey" != None ] && break
	sleep 0.2
done
if [ -z "$pubkey" ] || [ -z "$privkey" ] || [ "$privkey" = None ]; then
	fail "security/s3: the chunks were not tiered in time"
	return
fi
pubsize=$(curl -s -o /dev/null -w '%{size_download}' "$S3/pubdata/$pubkey")

# status_of CURL_ARGS...: "<status> <Content-Range> <error Code>" of a request.
status_of() {
	curl -s -D "$CONF_TMP/sec-s3-h" -o "$CONF_TMP/sec-s3-b" "$@"
	local status range code
	status=$(sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$CONF_TMP/sec-s3-h")
	range=$(grep -i '^content-range:' "$CONF_TMP/sec-s3-h" | cut -d' ' -f2- | tr -d '\r')
	code=$(sed -n 's:.*<Code>\([^<]*\)</Code>.*:\1:p' "$CONF_TMP/sec-s3-b")
	echo "$status ${range:--} ${code:--}"
}

# Section 2: a range that can never be satisfied is 416 with a usable
# Content-Range, anonymous or presigned.
expect_eq "s3: anonymous Range bytes=-0 → 416 InvalidRange, Content-Range bytes */size" \
	"$(status_of -H 'Range: bytes=-0' "$S3/pubdata/$pubkey")" "416 bytes */$pubsize InvalidRange"
expect_eq "s3: anonymous Range past the end → 416 InvalidRange" \
	"$(status_of -H "Range: bytes=$pubsize-" "$S3/pubdata/$pubkey")" "416 bytes */$pubsize InvalidRange"
url=$("${SEC_AWS[@]}" s3 presign "s3://private/$privkey" --expires-in 300)
privsize=$("${SEC_AWS[@]}" s3api head-object --bucket private --key "$privkey" --query ContentLength --output text)
expect_eq "s3: presigned Range bytes=-0 → 416 InvalidRange, Content-Range bytes */size" \
	"$(status_of -H 'Range: bytes=-0' "$url")" "416 bytes */$privsize InvalidRange"
if "${SEC_AWS[@]}" s3api get-object --bucket private --key "$privkey" --range bytes=-0 "$CONF_TMP/sec-s3-out" 2>"$CONF_TMP/sec-s3-err"; then
	fail "aws: get-object --range bytes=-0 refused"
else
	check "aws: get-object --range bytes=-0 → InvalidRange" grep -q InvalidRange "$CONF_TMP/sec-s3-err"
fi
# A range S3 cannot parse is ignored, not refused: the whole object.
expect_eq "s3: Range bytes=3-1 is ignored (200, whole object)" \
	"$(status_of -H 'Range: bytes=3-1' "$S3/pubdata/$pubkey") $(wc -c <"$CONF_TMP/sec-s3-b")" "200 - - $pubsize"

# A presigned URL that can never be valid says which parameter is wrong.
expect_eq "s3: presigned URL valid for more than 7 days → 400 AuthorizationQueryParametersError" \
	"$(status_of "${url/X-Amz-Expires=300/X-Amz-Expires=604801}" | cut -d' ' -f1,3)" "400 AuthorizationQueryParametersError"
expect_eq "s3: negative max-keys → 400 InvalidArgument" \
	"$(status_of "$S3/pubdata?list-type=2&max-keys=-1" | cut -d' ' -f1,3)" "400 InvalidArgument"
expect_eq "s3: response-* overrides on an unsigned request → 400 InvalidRequest" \
	"$(status_of "$S3/pubdata/$pubkey?response-content-type=text/html" | cut -d' ' -f1,3)" "400 InvalidRequest"

# A missing bucket is NoSuchBucket only to whom may see a tenant of that
# name; everyone else gets AccessDenied, as for an existing tenant, so that
# tenant names cannot be probed.
expect_eq "s3: anonymous, missing bucket → 403 AccessDenied" \
	"$(status_of "$S3/nosuchtenant?list-type=2" | cut -d' ' -f1,3)" "403 AccessDenied"
expect_eq "s3: anonymous, existing private bucket → 403 AccessDenied" \
	"$(status_of "$S3/private?list-type=2" | cut -d' ' -f1,3)" "403 AccessDenied"
if "${SEC_AWS[@]}" s3api list-objects-v2 --bucket nosuchtenant 2>"$CONF_TMP/sec-s3-err" >/dev/null; then
	fail "aws: missing bucket refused to a principal without a grant on it"
else
	check "aws: missing bucket, no grant on it → AccessDenied" grep -q AccessDenied "$CONF_TMP/sec-s3-err"
fi
read -r ROOT_AK ROOT_SK < <("$SILT_BIN" s3-key create root -o json | jq -r '"\(.access_key_id) \(.secret_access_key)"')
if aws_as "$ROOT_AK" "$ROOT_SK" s3api list-objects-v2 --bucket nosuchtenant 2>"$CONF_TMP/sec-s3-err" >/dev/null; then
	fail "aws: missing bucket refused to an admin"
else
	check "aws: missing bucket, admin → NoSuchBucket" grep -q NoSuchBucket "$CONF_TMP/sec-s3-err"
fi
