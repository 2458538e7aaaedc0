# The S3 head against real S3 clients: the aws CLI, s3cmd, rclone and boto3.
# Data reaches the head through the native API and tiering, so this also
# checks that the bytes in tier 2 are exactly the events appended.
need_pip aws awscli || { fail "s3: aws CLI (PyPI awscli) is not available"; return; }
need_pip s3cmd s3cmd || { fail "s3: s3cmd (PyPI) is not available"; return; }
need rclone rclone || { fail "s3: rclone (Debian) is not available"; return; }
need_pymod boto3 boto3

start_silt --tiering.max_lag 400ms --tiering.interval 100ms

"$SILT_BIN" tenant create acme >/dev/null
"$SILT_BIN" tenant create other >/dev/null
"$SILT_BIN" stream create acme/clicks --segments 2 >/dev/null
"$SILT_BIN" stream create other/secret >/dev/null
# A stream whose one event fills one of four segments: the other three are
# empty folders of the view, which S3 listings must not show.
"$SILT_BIN" stream create acme/sparse --segments 4 >/dev/null
seq 1 3000 | sed 's/.*/{"n":&}/' >$CONF_TMP/s3-events
"$SILT_BIN" append acme/clicks --file $CONF_TMP/s3-events 2>/dev/null
echo '{"n":1}' | "$SILT_BIN" append acme/sparse 2>/dev/null
echo hidden | "$SILT_BIN" append other/secret 2>/dev/null

"$SILT_BIN" principal create analyst >/dev/null
"$SILT_BIN" grant analyst read acme >/dev/null
read -r AK SK < <("$SILT_BIN" s3-key create analyst -o json | jq -r '"\(.access_key_id) \(.secret_access_key)"')
export AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_DEFAULT_REGION=us-east-1
export AWS_CONFIG_FILE=$SILT_DATA/aws-config
printf '[default]\ns3 =\n    signature_version = s3v4\n    addressing_style = path\n' >"$AWS_CONFIG_FILE"
AWS=(aws --endpoint-url "$S3")

# Wait until every event is visible in tier 2 (bounded by the lag ceiling).
for _ in $(seq 1 50); do
	n=$("${AWS[@]}" s3 cp --recursive s3://acme/clicks/ "$SILT_DATA/dl" --quiet 2>/dev/null && cat "$SILT_DATA"/dl/segment=*/* | wc -l)
	[ "${n:-0}" -ge 3000 ] && break
	rm -rf "$SILT_DATA/dl"
	sleep 0.2
done
# The manifest follows the chunks (rewritten once tiering has caught up);
# wait until it lists every chunk, so that sync and check see one state.
for _ in $(seq 1 50); do
	files=$("${AWS[@]}" s3 ls --recursive s3://acme/clicks/ | grep -c '/segment=')
	listed=$("${AWS[@]}" s3 cp s3://acme/clicks/_manifest.json - 2>/dev/null | jq '[.segments[].chunks | length] | add' 2>/dev/null)
	[ "${listed:-0}" = "$files" ] && break
	sleep 0.2
done
expect_eq "aws: the manifest lists every chunk" "${listed:-none}" "$files"

expect_eq "aws: ls lists only granted buckets" "$("${AWS[@]}" s3 ls | awk '{print $3}' | tr '\n' ' ')" "acme "
check "aws: ls --recursive shows chunk files" sh -c "'${AWS[0]}' --endpoint-url $S3 s3 ls s3://acme/clicks/ --recursive | grep -q 'segment=.*\.txt'"
expect_eq "aws: cp --recursive fetched every event" "$(cat "$SILT_DATA"/dl/segment=*/* | sort | md5sum)" "$(sort $CONF_TMP/s3-events | md5sum)"
key=$("${AWS[@]}" s3 ls s3://acme/clicks/segment=0/ | awk '{print $4}' | head -1)
"${AWS[@]}" s3 cp "s3://acme/clicks/segment=0/$key" - >$CONF_TMP/s3-one
expect_eq "aws: cp to stdout equals the file" "$(md5sum <$CONF_TMP/s3-one)" "$(md5sum <"$SILT_DATA/dl/segment=0/$key")"
# Concatenating a segment's chunks in name order gives the segment's events in order.
"$SILT_BIN" read acme/clicks --segment 0 --from 0 >$CONF_TMP/s3-seg0 2>/dev/null
cat "$SILT_DATA"/dl/segment=0/* >$CONF_TMP/s3-cat0
check "aws: segment chunks in name order = native read of the segment" cmp $CONF_TMP/s3-seg0 $CONF_TMP/s3-cat0
check "aws: sync downloads" "${AWS[@]}" s3 sync s3://acme/clicks "$SILT_DATA/sync" --quiet
expect_eq "aws: sync got the same files" "$(cd "$SILT_DATA/sync" && find . -type f | sort | xargs cat | md5sum)" "$(cd "$SILT_DATA/dl" && find . -type f | sort | xargs cat | md5sum)"
etag=$("${AWS[@]}" s3api head-object --bucket acme --key "clicks/segment=0/$key" | jq -r .ETag | tr -d '"')
expect_eq "aws: ETag is the MD5 of the bytes" "$etag" "$(md5sum <"$SILT_DATA/dl/segment=0/$key" | cut -d' ' -f1)"
url=$("${AWS[@]}" s3 presign "s3://acme/clicks/segment=0/$key" --expires-in 60)
expect_eq "aws: presigned URL works" "$(curl -s "$url" | md5sum)" "$(md5sum <$CONF_TMP/s3-one)"
expect_eq "aws: tampered presigned URL is 403" "$(curl -s -o /dev/null -w '%{http_code}' "${url/X-Amz-Expires=60/X-Amz-Expires=61}")" 403
echo x >$CONF_TMP/s3-up
if "${AWS[@]}" s3 cp $CONF_TMP/s3-up s3://acme/clicks/new.txt 2>$CONF_TMP/s3-err; then fail "aws: upload refused"; else
	check "aws: upload refused with AccessDenied" grep -q AccessDenied $CONF_TMP/s3-err
fi
if "${AWS[@]}" s3 rm "s3://acme/clicks/segment=0/$key" 2>$CONF_TMP/s3-err; then fail "aws: delete refused"; else
	check "aws: delete refused with AccessDenied" grep -q AccessDenied $CONF_TMP/s3-err
fi
if "${AWS[@]}" s3 ls s3://other/ 2>$CONF_TMP/s3-err; then fail "aws: ungranted bucket refused"; else
	check "aws: ungranted bucket refused with AccessDenied" grep -q AccessDenied $CONF_TMP/s3-err
fi
if AWS_SECRET_ACCESS_KEY=wrong "${AWS[@]}" s3 ls s3://acme/ 2>$CONF_TMP/s3-err; then fail "aws: wrong secret refused"; else
	check "aws: wrong secret → SignatureDoesNotMatch" grep -q SignatureDoesNotMatch $CONF_TMP/s3-err
fi

# The aws CLI v2, which signs and downloads differently from PyPI's v1 (CRC
# checksums, multipart-ranged GETs with If-Match). v2 is not on PyPI, and a
# system-wide aws would sit on the user's PATH beside any they have, so the
# suite does not install one on a developer's machine: it uses an aws v2 the
# machine already has (Debian's awscli, or AWS's installer). CI machines are
# thrown away after the run, so there (CI=true) Debian's awscli is installed.
find_aws2() {
	local a
	while read -r a; do
		[ "$a" = "$SILT_VENV/bin/aws" ] && continue
		if "$a" --version 2>&1 | grep -q '^aws-cli/2'; then
			echo "$a"
			return 0
		fi
	done < <(type -ap aws)
	return 1
}
AWS2_BIN=$(find_aws2)
if [ -z "$AWS2_BIN" ] && [ "${CI:-}" = true ]; then
	echo "installing awscli (Debian) for the aws CLI v2"
	apt_install awscli
	AWS2_BIN=$(find_aws2)
fi
if [ -n "$AWS2_BIN" ]; then
	AWS2=("$AWS2_BIN" --endpoint-url "$S3")
	check "aws v2: ls" sh -c "$AWS2_BIN --endpoint-url $S3 s3 ls s3://acme/clicks/segment=0/ | grep -q '$key'"
	rm -rf "$SILT_DATA/dl2"
	check "aws v2: cp --recursive" "${AWS2[@]}" s3 cp --recursive s3://acme/clicks/ "$SILT_DATA/dl2" --quiet
	expect_eq "aws v2: same files as v1" "$(cd "$SILT_DATA/dl2" && find . -type f | sort | xargs cat | md5sum)" "$(cd "$SILT_DATA/dl" && find . -type f | sort | xargs cat | md5sum)"
	expect_eq "aws v2: cp to stdout" "$("${AWS2[@]}" s3 cp "s3://acme/clicks/segment=0/$key" - | md5sum)" "$(md5sum <$CONF_TMP/s3-one)"
	url2=$("${AWS2[@]}" s3 presign "s3://acme/clicks/segment=0/$key" --expires-in 60)
	expect_eq "aws v2: presigned URL works" "$(curl -s "$url2" | md5sum)" "$(md5sum <$CONF_TMP/s3-one)"
	if "${AWS2[@]}" s3 cp $CONF_TMP/s3-up s3://acme/clicks/new2.txt 2>$CONF_TMP/s3-err2; then fail "aws v2: upload refused"; else
		check "aws v2: upload refused with AccessDenied" grep -q AccessDenied $CONF_TMP/s3-err2
	fi
elif [ "${CI:-}" = true ]; then
	fail "aws v2: Debian awscli could not be installed"
else
	echo "  note aws v2 checks not run: no aws CLI v2 on this machine (apt-get install awscli, then run again)"
fi

# s3cmd
S3CMD=(s3cmd --access_key="$AK" --secret_key="$SK" --host="127.0.0.1:$S3_PORT" --host-bucket="127.0.0.1:$S3_PORT" --no-ssl --config=/dev/null)
check "s3cmd: ls" sh -c "$(printf '%q ' "${S3CMD[@]}") ls s3://acme/clicks/segment=0/ | grep -q '$key'"
check "s3cmd: get (MD5 checked)" "${S3CMD[@]}" get --force "s3://acme/clicks/segment=0/$key" "$SILT_DATA/s3cmd-one"
check "s3cmd: same bytes" cmp "$SILT_DATA/s3cmd-one" $CONF_TMP/s3-one

# rclone
RC=":s3,provider=Other,endpoint='$S3',access_key_id=$AK,secret_access_key=$SK,force_path_style=true:"
check "rclone: ls" sh -c "env -u AWS_CA_BUNDLE rclone ls \"${RC}acme/clicks\" | grep -q '$key'"
check "rclone: copy" env -u AWS_CA_BUNDLE rclone copy "${RC}acme/clicks" "$SILT_DATA/rclone"
check "rclone: check --download" env -u AWS_CA_BUNDLE rclone check --download "${RC}acme/clicks" "$SILT_DATA/rclone"

# boto3: paging with a small page size, ranged GET.
check "boto3: paginated listing and a ranged read" python3 - "$S3" "$key" <<'PY'
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
keys = [o["Key"] for p in s3.get_paginator("list_objects_v2").paginate(Bucket="acme", Prefix="clicks/", PaginationConfig={"PageSize": 1}) for o in p.get("Contents", [])]
assert len(keys) >= 2 and keys == sorted(keys), keys
full = s3.get_object(Bucket="acme", Key="clicks/segment=0/" + sys.argv[2])["Body"].read()
part = s3.get_object(Bucket="acme", Key="clicks/segment=0/" + sys.argv[2], Range="bytes=3-10")["Body"].read()
assert part == full[3:11], (part, full[:12])
PY
# S3's own semantics where net/http's differ (the hardening issue's
# differential run): ignored and unsatisfiable ranges, unquoted ETags,
# Content-Length under response-content-encoding, owners, any delimiter,
# MaxKeys as asked, no empty folders, presigned URLs beyond a week.
for _ in $(seq 1 50); do
	"${AWS[@]}" s3 ls --recursive s3://acme/sparse/ 2>/dev/null | grep -q '/segment=' && break
	sleep 0.2
done
check "boto3: GetObject, HeadObject and listings answer as S3 does" python3 - "$S3" "$key" <<'PY'
import sys, urllib.request, urllib.error, boto3, botocore
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
key = "clicks/segment=0/" + sys.argv[2]
full = s3.get_object(Bucket="acme", Key=key)["Body"].read()
etag = s3.head_object(Bucket="acme", Key=key)["ETag"]
def err(f):
    try:
        f()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None
for rng in ["bytes=3-1", "bytes=abc", "items=0-1", "bytes=0-1,3-4"]:
    r = s3.get_object(Bucket="acme", Key=key, Range=rng)
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200 and "ContentRange" not in r and r["Body"].read() == full, rng
assert err(lambda: s3.get_object(Bucket="acme", Key=key, Range="bytes=-0")) == ("InvalidRange", 416)
assert s3.get_object(Bucket="acme", Key=key, IfMatch=etag.strip('"'))["Body"].read() == full
assert err(lambda: s3.get_object(Bucket="acme", Key=key, IfNoneMatch=etag.strip('"'))) == ("304", 304)
r = s3.get_object(Bucket="acme", Key=key, ResponseContentEncoding="gzip")
assert r["ResponseMetadata"]["HTTPHeaders"].get("content-length") == str(len(full)), r["ResponseMetadata"]["HTTPHeaders"]
r = s3.head_object(Bucket="acme", Key=key, ResponseContentEncoding="gzip")
assert r["ResponseMetadata"]["HTTPHeaders"].get("content-length") == str(len(full)), r["ResponseMetadata"]["HTTPHeaders"]
assert all("Owner" in o for o in s3.list_objects(Bucket="acme", Prefix="clicks/")["Contents"])
assert all("Owner" in o for o in s3.list_objects_v2(Bucket="acme", Prefix="clicks/", FetchOwner=True)["Contents"])
assert not any("Owner" in o for o in s3.list_objects_v2(Bucket="acme", Prefix="clicks/")["Contents"])
r = s3.list_objects_v2(Bucket="acme", Prefix="clicks/", Delimiter="=")
assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["clicks/segment="] and [o["Key"] for o in r["Contents"]] == ["clicks/_manifest.json"], r
assert s3.list_objects_v2(Bucket="acme", MaxKeys=5000)["MaxKeys"] == 5000
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="acme", Prefix="sparse/segment=")["Contents"]]
held = sorted({k[:k.index("/", len("sparse/")) + 1] for k in keys})
got = [p["Prefix"] for p in s3.list_objects_v2(Bucket="acme", Prefix="sparse/", Delimiter="/")["CommonPrefixes"]]
assert len(held) == 1 and got == held, (got, held)
url = s3.generate_presigned_url("get_object", Params={"Bucket": "acme", "Key": key}, ExpiresIn=8 * 86400)
try:
    urllib.request.urlopen(url)
    raise AssertionError("a URL presigned for 8 days was accepted")
except urllib.error.HTTPError as e:
    assert e.code == 400 and b"<Code>AuthorizationQueryParametersError</Code>" in e.read()
assert err(lambda: s3.list_objects_v2(Bucket="nosuchbucket")) == ("AccessDenied", 403)
PY

# The same requests against moto_server holding the same objects, where moto
# answers as AWS documents (moto differs from AWS elsewhere: it honours
# items=0-1, ignores If-None-Match: * and response-content-encoding, and
# sends no Content-Range with a 416, so those are checked above only).
if need_pip moto_server 'moto[server]'; then
	read -r S3DIFF_PORT <<<"$(free_ports 1)"
	S3DIFF_LOG=$(mktemp /tmp/silt-moto.XXXXXX)
	moto_server -H 127.0.0.1 -p "$S3DIFF_PORT" >"$S3DIFF_LOG" 2>&1 &
	S3DIFF_PID=$!
	stop_s3diff() {
		kill "$S3DIFF_PID" 2>/dev/null || true
		wait "$S3DIFF_PID" 2>/dev/null || true
		rm -f "$S3DIFF_LOG"
	}
	trap 'stop_s3diff; on_exit' EXIT
	for _ in $(seq 1 100); do
		curl -fsS "http://127.0.0.1:$S3DIFF_PORT/" >/dev/null 2>&1 && break
		sleep 0.1
	done
	check "moto: same answers as moto_server for ranges, If-Match/If-None-Match and listings" python3 - "$S3" "http://127.0.0.1:$S3DIFF_PORT" <<'PY'
import sys, hashlib, urllib.request, urllib.error, boto3
silt = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
moto = boto3.client("s3", endpoint_url=sys.argv[2], region_name="us-east-1",
                    aws_access_key_id="test", aws_secret_access_key="test")
moto.create_bucket(Bucket="acme")
keys = [o["Key"] for p in silt.get_paginator("list_objects_v2").paginate(Bucket="acme") for o in p.get("Contents", [])]
for k in keys:
    moto.put_object(Bucket="acme", Key=k, Body=silt.get_object(Bucket="acme", Key=k)["Body"].read())
chunk = next(k for k in keys if "/segment=" in k)
etag = silt.head_object(Bucket="acme", Key=chunk)["ETag"]
assert etag == moto.head_object(Bucket="acme", Key=chunk)["ETag"]

def answer(client, headers):
    url = client.generate_presigned_url("get_object", Params={"Bucket": "acme", "Key": chunk}, ExpiresIn=300)
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.headers.get("Content-Range"), hashlib.md5(r.read()).hexdigest()
    except urllib.error.HTTPError as e:
        return e.code, None, None

cases = [{"Range": r} for r in ["bytes=0-9", "bytes=5-", "bytes=-7", "bytes=-999999", "bytes=0-999999",
                                "bytes=3-1", "bytes=abc", "bytes=0-1,3-4", "bytes=-0", "bytes=999999-"]]
cases += [{"If-Match": etag}, {"If-Match": etag.strip('"')}, {"If-Match": '"0123"'},
          {"If-None-Match": etag}, {"If-None-Match": etag.strip('"')}, {"If-None-Match": '"0123"'},
          {"If-Match": etag.strip('"'), "Range": "bytes=0-3"}]
diff = [(c, answer(silt, c), answer(moto, c)) for c in cases]
diff = [d for d in diff if d[1] != d[2]]
assert not diff, diff

def listing(client, **kw):
    out = ([], [])
    for p in client.get_paginator("list_objects_v2").paginate(Bucket="acme", **kw):
        out[0].extend(o["Key"] for o in p.get("Contents", []))
        out[1].extend(c["Prefix"] for c in p.get("CommonPrefixes", []))
    return out
for kw in [{}, {"Delimiter": "/"}, {"Prefix": "sparse/", "Delimiter": "/"}, {"Prefix": "clicks/", "Delimiter": "="},
           {"Prefix": "clicks/", "Delimiter": "."}, {"Delimiter": "/", "PaginationConfig": {"PageSize": 1}},
           {"Prefix": "clicks/segment=0/", "Delimiter": "0", "PaginationConfig": {"PageSize": 2}}]:
    assert listing(silt, **kw) == listing(moto, **kw), (kw, listing(silt, **kw), listing(moto, **kw))
for mk in [0, 1, 1001, 5000]:
    assert silt.list_objects_v2(Bucket="acme", MaxKeys=mk)["MaxKeys"] == moto.list_objects_v2(Bucket="acme", MaxKeys=mk)["MaxKeys"] == mk
PY
	stop_s3diff
	trap on_exit EXIT
fi
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_CONFIG_FILE

# s3fs-fuse: a FUSE mount of the bucket, read with ordinary tools. (Users mount
# with -o ro; the suite mounts read-write so that silt's refusal is what is tested.)
if need s3fs s3fs; then
	MNT=$SILT_DATA/s3fs
	mkdir -p "$MNT"
	echo "$AK:$SK" >"$SILT_DATA/s3fs-passwd"
	chmod 600 "$SILT_DATA/s3fs-passwd"
	s3fs acme "$MNT" -f -o "passwd_file=$SILT_DATA/s3fs-passwd,url=$S3,use_path_request_style,dbglevel=info" >"$SILT_DATA/s3fs.log" 2>&1 &
	S3FS_PID=$!
	for _ in $(seq 1 50); do [ -d "$MNT/clicks/segment=0" ] && break; sleep 0.1; done
	check "s3fs: mount shows the stream's segment directories" test -d "$MNT/clicks/segment=1"
	expect_eq "s3fs: the mounted chunks hold every event" "$(cat "$MNT"/clicks/segment=*/*.txt | sort | md5sum)" "$(sort $CONF_TMP/s3-events | md5sum)"
	check "s3fs: a chunk read through the mount is byte-identical" cmp "$MNT/clicks/segment=0/$key" "$SILT_DATA/dl/segment=0/$key"
	# Mounted read-write on purpose: the refusal must come from silt. s3fs
	# may report success to the writer and fail the upload behind it, so
	# what is checked is that silt said 403 and nothing was stored.
	echo x 2>/dev/null >"$MNT/clicks/new.txt"
	sync
	expect_eq "s3fs: a file written through the mount is not stored" "$("${AWS[@]}" s3 ls s3://acme/clicks/new.txt 2>/dev/null | wc -l)" 0
	check "s3fs: silt answered the upload with 403" grep -q "403" "$SILT_DATA/s3fs.log"
	fusermount -u "$MNT" 2>/dev/null || umount "$MNT" 2>/dev/null
	kill "$S3FS_PID" 2>/dev/null
	wait "$S3FS_PID" 2>/dev/null
else
	fail "s3fs: s3fs-fuse (Debian s3fs) is not available"
fi

check "metrics: the S3 head's requests are counted on /metrics" sh -c "curl -s $API/metrics | grep -q 'silt_head_requests_total{.*head=\"s3\"'"
