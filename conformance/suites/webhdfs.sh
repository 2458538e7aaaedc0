# The WebHDFS head against real Hadoop clients: Apache Hadoop's own
# WebHdfsFileSystem through FsShell (what `hadoop fs` runs) and a small Java
# probe, fsspec's WebHDFS filesystem, and Spark reading the stream as JSON.
# The Hadoop jars come from Maven Central through conformance/webhdfs/pom.xml
# (cached in $SILT_CACHE/m2, copied to conformance/webhdfs/target/, which git
# ignores); the Python clients live in the suites' virtualenv (venv.sh).
#
# Hadoop authenticates two ways here: the user.name simple mode (silt started
# with --webhdfs.insecure_user_name, HADOOP_USER_NAME naming the principal) and
# silt bearer tokens through Hadoop's OAuth2 support, with the suite's own
# io.silt.conformance.StaticTokenProvider handing Hadoop a fixed token and
# with Hadoop's ConfCredentialBasedAccessTokenProvider getting one from the
# head's OAuth2 token endpoint. HdfsCLI (PyPI hdfs) reads in user.name mode.
need java default-jdk-headless || return
need javac default-jdk-headless || return
need mvn maven || return
need_pymod "fsspec requests" fsspec requests

WH_DIR=$PWD/conformance/webhdfs
WH_T=$WH_DIR/target
mkdir -p "$WH_T/conf" "$WH_T/classes"
if [ ! -s "$WH_T/lib/hadoop-client-api-3.4.1.jar" ] || [ ! -s "$WH_T/lib/hadoop-client-runtime-3.4.1.jar" ] ||
	[ ! -s "$WH_T/lib/bcprov-jdk18on-1.78.1.jar" ]; then
	echo "  fetching Hadoop client jars (Maven Central)"
	if ! (cd "$WH_DIR" && mvn -q -B "-Dmaven.repo.local=$SILT_M2" dependency:copy-dependencies -DoutputDirectory=target/lib >"$WH_T/mvn.log" 2>&1); then
		fail "webhdfs: fetch Hadoop client jars (see $WH_T/mvn.log)"
		return
	fi
fi
# Hadoop's Configuration insists on a core-site.xml on the classpath.
printf '<?xml version="1.0"?>\n<configuration/>\n' >"$WH_T/conf/core-site.xml"
if ! javac -nowarn -d "$WH_T/classes" -cp "$WH_T/lib/*" "$WH_DIR"/src/io/silt/conformance/*.java >"$WH_T/javac.log" 2>&1; then
	fail "webhdfs: compile the Java helpers"
	sed 's/^/       /' "$WH_T/javac.log" | head -20
	return
fi
WH_CP="$WH_T/conf:$WH_T/classes:$WH_T/lib/*"
# The client JVMs are short-lived: C1 only and the serial GC start faster.
WH_JAVA=(java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$WH_CP")

start_silt --tiering.max_lag 400ms --tiering.interval 100ms --webhdfs.insecure_user_name || return
W=webhdfs://127.0.0.1:$HDFS_PORT
WD=$SILT_DATA/wh
mkdir -p "$WD"

"$SILT_BIN" tenant create acme >/dev/null
"$SILT_BIN" stream create acme/clicks --segments 2 >/dev/null
seq 1 3000 | sed 's/.*/{"n":&}/' >"$WD/events"
# One small unkeyed append lands in one segment, so the two halves go in with
# routing keys that hash to segment 0 ("left") and segment 1 ("x").
head -1500 "$WD/events" | "$SILT_BIN" append acme/clicks --key left 2>/dev/null
tail -n +1501 "$WD/events" | "$SILT_BIN" append acme/clicks --key x 2>/dev/null
"$SILT_BIN" principal create analyst >/dev/null
"$SILT_BIN" grant analyst read acme >/dev/null
ANALYST_TOKEN=$("$SILT_BIN" token create analyst -o json | jq -r .token)

# fs ARGS...: FsShell as Hadoop's `hadoop fs`, stdout only (SLF4J chatter on
# stderr goes to $WD/fs.err).
fs() { "${WH_JAVA[@]}" org.apache.hadoop.fs.FsShell "$@" 2>"$WD/fs.err"; }
export HADOOP_USER_NAME=root
OAUTH=(-D dfs.webhdfs.oauth2.enabled=true
	-D dfs.webhdfs.oauth2.access.token.provider=io.silt.conformance.StaticTokenProvider)

# Wait until every event is in tier 2 (bounded by the lag ceiling).
want_bytes=$(wc -c <"$WD/events")
for _ in $(seq 1 50); do
	got=0
	for s in 0 1; do
		n=$(curl -s "$HDFS/webhdfs/v1/acme/clicks/segment=$s?op=GETCONTENTSUMMARY&user.name=root" | jq -r '.ContentSummary.length // 0')
		got=$((got + ${n:-0}))
	done
	[ "$got" -ge "$want_bytes" ] && break
	sleep 0.2
done
expect_eq "webhdfs: every event reached tier 2" "$got" "$want_bytes"
# The manifest follows the chunks (rewritten once tiering has caught up);
# wait until it lists every chunk file, so that the sizes below agree.
for _ in $(seq 1 50); do
	files=$(for s in 0 1; do curl -s "$HDFS/webhdfs/v1/acme/clicks/segment=$s?op=LISTSTATUS&user.name=root" | jq '.FileStatuses.FileStatus | length'; done | awk '{s += $1} END {print s}')
	listed=$(curl -sL "$HDFS/webhdfs/v1/acme/clicks/_manifest.json?op=OPEN&user.name=root" | jq '[.segments[].chunks | length] | add' 2>/dev/null)
	[ "${listed:-0}" = "$files" ] && break
	sleep 0.2
done
expect_eq "webhdfs: the manifest lists every chunk file" "${listed:-none}" "$files"
for s in 0 1; do "$SILT_BIN" read acme/clicks --segment "$s" --from 0 >"$WD/native$s" 2>/dev/null; done
expect_eq "webhdfs: the events are split over both segments" "$(wc -l <"$WD/native0") $(wc -l <"$WD/native1")" "1500 1500"

# --- Hadoop FsShell, user.name mode -------------------------------------------
fs -ls -R "$W/acme/clicks" >"$WD/ls"
check "hadoop: -ls -R lists segment=0 and segment=1 as directories" \
	sh -c "grep -q '^d.* $W/acme/clicks/segment=0\$' '$WD/ls' && grep -q '^d.* $W/acme/clicks/segment=1\$' '$WD/ls'"
check "hadoop: -ls -R lists chunk files in both segments and _manifest.json" \
	sh -c "grep -q '^-r--r--r--.* $W/acme/clicks/segment=0/[0-9-]*\.txt\$' '$WD/ls' &&
		grep -q '^-r--r--r--.* $W/acme/clicks/segment=1/[0-9-]*\.txt\$' '$WD/ls' &&
		grep -q '^-.* $W/acme/clicks/_manifest.json\$' '$WD/ls'"
for s in 0 1; do
	fs -cat "$W/acme/clicks/segment=$s/*.txt" >"$WD/cat$s"
	check "hadoop: -cat of segment=$s = native read of segment $s" cmp "$WD/cat$s" "$WD/native$s"
done
expect_eq "hadoop: the segments hold exactly the events appended" "$(cat "$WD/cat0" "$WD/cat1" | sort | md5sum)" "$(sort "$WD/events" | md5sum)"

# Expected numbers, from the raw protocol (curl) rather than from Hadoop.
raw_ls() { curl -s "$HDFS/webhdfs/v1/acme/clicks$1?op=LISTSTATUS&user.name=root"; }
nchunks=$(for s in 0 1; do raw_ls "/segment=$s" | jq '.FileStatuses.FileStatus | map(select(.type == "FILE")) | length'; done | awk "{s += \$1} END {print s}")
manifest=$(curl -s "$HDFS/webhdfs/v1/acme/clicks/_manifest.json?op=GETFILESTATUS&user.name=root" | jq .FileStatus.length)
total=$((want_bytes + manifest))
read -r dirs files length _ < <(fs -count "$W/acme/clicks")
expect_eq "hadoop: -count (dirs files bytes)" "$dirs $files $length" "3 $((nchunks + 1)) $total"
read -r du_len du_space _ < <(fs -du -s "$W/acme/clicks")
expect_eq "hadoop: -du -s" "$du_len $du_space" "$total $total"
chunk=$(raw_ls /segment=0 | jq -r '[.FileStatuses.FileStatus[] | select(.type == "FILE")][0].pathSuffix')
chunk_len=$(raw_ls /segment=0 | jq -r "[.FileStatuses.FileStatus[] | select(.pathSuffix == \"$chunk\")][0].length")
expect_eq "hadoop: -stat '%n %b %o %r %F'" "$(fs -stat '%n %b %o %r %F' "$W/acme/clicks/segment=0/$chunk")" "$chunk $chunk_len 134217728 1 regular file"
expect_eq "hadoop: -stat %F of a segment" "$(fs -stat %F "$W/acme/clicks/segment=1")" "directory"
raw_full=$(curl -sL "$HDFS/webhdfs/v1/acme/clicks/segment=0/$chunk?op=GETFILECHECKSUM&user.name=root" | jq -r '"\(.FileChecksum.algorithm)\t\(.FileChecksum.bytes)"')
# Hadoop prints the checksum's length (28 bytes) of the 32 the server sends.
raw_sum=${raw_full:0:$((${#raw_full} - 8))}
expect_eq "hadoop: -checksum gives the MD5-of-MD5-of-CRC32C checksum" "$(fs -checksum "$W/acme/clicks/segment=0/$chunk")" "$W/acme/clicks/segment=0/$chunk	$raw_sum"
check "hadoop: -checksum value is MD5-of-0MD5-of-512CRC32C with 28 bytes, sent as HDFS does in a 32-byte buffer" sh -c "printf '%s' '$raw_full' | grep -Eq '^MD5-of-0MD5-of-512CRC32C	[0-9a-f]{56}00000000\$'"
check "hadoop: -test -e on a chunk" fs -test -e "$W/acme/clicks/segment=0/$chunk"
check "hadoop: -test -d on a segment" fs -test -d "$W/acme/clicks/segment=1"
if fs -test -e "$W/acme/clicks/no-such-file"; then fail "hadoop: -test -e on a missing path fails"; else pass "hadoop: -test -e on a missing path fails"; fi
check "hadoop: -get the whole stream" fs -get "$W/acme/clicks" "$WD/get"
check "hadoop: -get segment=0 = native read" sh -c "cat '$WD'/get/segment=0/*.txt | cmp - '$WD/native0'"
check "hadoop: -get segment=1 = native read" sh -c "cat '$WD'/get/segment=1/*.txt | cmp - '$WD/native1'"
check "hadoop: -get _manifest.json = raw OPEN" sh -c "curl -sL '$HDFS/webhdfs/v1/acme/clicks/_manifest.json?op=OPEN&user.name=root' | cmp - '$WD/get/_manifest.json'"
# A seek into the middle of a file (-tail reads the last KB via offset=).
expect_eq "hadoop: -tail = last KB of the chunk" "$(fs -tail "$W/acme/clicks/segment=0/$chunk" | md5sum)" "$(tail -c 1024 "$WD/get/segment=0/$chunk" | md5sum)"

expect_eq "hadoop: -df (capacity = used, nothing available)" "$(fs -df "$W/acme/clicks" | awk 'NR == 2 {print $2, $3, $4}')" "$total $total 0"
expect_eq "hadoop: -count -u (no quotas)" "$(fs -count -u "$W/acme/clicks" | awk '{print $1, $2, $3, $4}')" "none inf none inf"
expect_eq "hadoop: -count -e reports Replicated" "$(fs -count -e "$W/acme/clicks" | awk '{print $4}')" "Replicated"
# The FileSystem API itself: seeks, positional reads, block locations,
# listing iterators, globs, access checks, status and quota calls.
"${WH_JAVA[@]}" io.silt.conformance.ReadProbe "$W" "/acme/clicks/segment=0/$chunk" "$WD/get/segment=0/$chunk" >"$WD/read-probe" 2>/dev/null
while read -r verdict rest; do
	if [ "$verdict" = ok ]; then pass "hadoop api: $rest"; else fail "hadoop api: $rest"; fi
done <"$WD/read-probe"
expect_eq "hadoop api: the read probe ran all 17 checks" "$(wc -l <"$WD/read-probe")" 17

echo x >"$WD/up"
for cmd in "-mkdir $W/acme/clicks/newdir" "-put $WD/up $W/acme/clicks/up.txt" "-rm $W/acme/clicks/_manifest.json" \
	"-mv $W/acme/clicks/_manifest.json $W/acme/clicks/m.json" "-chmod 777 $W/acme/clicks/_manifest.json"; do
	# shellcheck disable=SC2086
	if fs $cmd; then fail "hadoop: ${cmd%% *} refused"; else
		check "hadoop: ${cmd%% *} refused as read-only" grep -q 'read-only' "$WD/fs.err"
	fi
done
"${WH_JAVA[@]}" io.silt.conformance.WriteProbe "$W" /acme/clicks >"$WD/probe" 2>/dev/null
expect_eq "hadoop: every FileSystem write throws AccessControlException" \
	"$(awk '{print $2}' "$WD/probe" | sort -u)" "org.apache.hadoop.security.AccessControlException"
expect_eq "hadoop: the write probe tried 8 operations" "$(wc -l <"$WD/probe")" 8
nothing_written() { ! fs -test -e "$W/acme/clicks/probe.txt" && ! fs -test -e "$W/acme/clicks/up.txt" && fs -test -e "$W/acme/clicks/_manifest.json"; }
check "hadoop: nothing was written" nothing_written
if HADOOP_USER_NAME=nobody fs -ls "$W/acme/clicks"; then fail "hadoop: ungranted user.name refused"; else
	check "hadoop: ungranted user.name refused (Permission denied)" grep -q 'Permission denied' "$WD/fs.err"
fi

# --- Hadoop FsShell, bearer token through OAuth2 -----------------------------
# HADOOP_USER_NAME names an ungranted user, so only the token can succeed.
export HADOOP_USER_NAME=nobody
expect_eq "hadoop oauth2: -ls -R with a bearer token" "$(fs "${OAUTH[@]}" -D "silt.webhdfs.token=$ANALYST_TOKEN" -ls -R "$W/acme/clicks" | md5sum)" "$(md5sum <"$WD/ls")"
fs "${OAUTH[@]}" -D "silt.webhdfs.token=$ANALYST_TOKEN" -cat "$W/acme/clicks/segment=1/*.txt" >"$WD/oauth-cat1"
check "hadoop oauth2: -cat segment=1 = native read" cmp "$WD/oauth-cat1" "$WD/native1"
expect_eq "hadoop oauth2: -count" "$(fs "${OAUTH[@]}" -D "silt.webhdfs.token=$ANALYST_TOKEN" -count "$W/acme/clicks" | awk '{print $1, $2, $3}')" "3 $((nchunks + 1)) $total"
if fs "${OAUTH[@]}" -D "silt.webhdfs.token=$ANALYST_TOKEN" -mkdir "$W/acme/clicks/newdir"; then fail "hadoop oauth2: -mkdir refused"; else
	check "hadoop oauth2: -mkdir refused as read-only" grep -q 'read-only' "$WD/fs.err"
fi
if fs "${OAUTH[@]}" -D silt.webhdfs.token=silt_not_a_real_token -ls "$W/acme/clicks"; then fail "hadoop oauth2: a wrong token is refused"; else
	pass "hadoop oauth2: a wrong token is refused"
fi

# --- Hadoop FsShell, OAuth2 client credentials against silt's token endpoint ---
# Hadoop's own ConfCredentialBasedAccessTokenProvider trades the principal's
# API token for a short-lived access token at $HDFS/oauth2/token.
OAUTH_CC=(-D dfs.webhdfs.oauth2.enabled=true
	-D dfs.webhdfs.oauth2.access.token.provider=org.apache.hadoop.hdfs.web.oauth2.ConfCredentialBasedAccessTokenProvider
	-D dfs.webhdfs.oauth2.client.id=analyst
	-D dfs.webhdfs.oauth2.refresh.url=$HDFS/oauth2/token)
expect_eq "hadoop oauth2 client credentials: -ls -R" "$(fs "${OAUTH_CC[@]}" -D "dfs.webhdfs.oauth2.credential=$ANALYST_TOKEN" -ls -R "$W/acme/clicks" | md5sum)" "$(md5sum <"$WD/ls")"
for s in 0 1; do
	fs "${OAUTH_CC[@]}" -D "dfs.webhdfs.oauth2.credential=$ANALYST_TOKEN" -cat "$W/acme/clicks/segment=$s/*.txt" >"$WD/oauth-cc-cat$s"
	check "hadoop oauth2 client credentials: -cat segment=$s = native read" cmp "$WD/oauth-cc-cat$s" "$WD/native$s"
done
if fs "${OAUTH_CC[@]}" -D "dfs.webhdfs.oauth2.credential=$ANALYST_TOKEN" -mkdir "$W/acme/clicks/newdir"; then
	fail "hadoop oauth2 client credentials: -mkdir refused"
else
	check "hadoop oauth2 client credentials: -mkdir refused as read-only" grep -q 'read-only' "$WD/fs.err"
fi
if fs "${OAUTH_CC[@]}" -D dfs.webhdfs.oauth2.credential=silt_not_a_real_token -ls "$W/acme/clicks"; then
	fail "hadoop oauth2 client credentials: a wrong credential is refused"
else
	check "hadoop oauth2 client credentials: a wrong credential is refused" grep -q 'Unable to obtain access token' "$WD/fs.err"
fi
tok_json=$(curl -s -d grant_type=client_credentials -d client_id=analyst --data-urlencode "client_secret=$ANALYST_TOKEN" "$HDFS/oauth2/token")
expect_eq "token endpoint: bearer token for an hour" "$(jq -r '"\(.token_type) \(.expires_in)"' <<<"$tok_json")" "bearer 3600"
expect_eq "token endpoint: the access token is labelled webhdfs-oauth2" \
	"$("$SILT_BIN" token list analyst -o json | jq -r '[.[] | select(.label == "webhdfs-oauth2")] | length > 0')" "true"
expect_eq "token endpoint: another principal's token is invalid_client" \
	"$(curl -s -o /dev/null -w '%{http_code} ' -d grant_type=client_credentials -d client_id=root --data-urlencode "client_secret=$ANALYST_TOKEN" "$HDFS/oauth2/token")$(curl -s -d grant_type=client_credentials -d client_id=root --data-urlencode "client_secret=$ANALYST_TOKEN" "$HDFS/oauth2/token" | jq -r .error)" \
	"401 invalid_client"
export HADOOP_USER_NAME=root

# --- Delegation tokens through Hadoop's API ----------------------------------
# getDelegationToken, decodeIdentifier, renew, cancel, and a read by a UGI whose
# only credential is the token (user.name=nobody alone would be refused).
wh_probe() { # NAME-PREFIX EXPECTED-CHECKS JAVA-ARGS...
	local prefix=$1 want=$2 out
	shift 2
	out=$("${WH_JAVA[@]}" "$@" 2>"$WD/probe.err")
	while read -r verdict rest; do
		[ -n "$verdict" ] || continue
		if [ "$verdict" = ok ]; then pass "$prefix: $rest"; else fail "$prefix: $rest"; fi
	done <<<"$out"
	expect_eq "$prefix: the probe ran all $want checks" "$(grep -c '^\(ok\|FAIL\) ' <<<"$out")" "$want"
}
wh_probe "hadoop delegation" 8 io.silt.conformance.DelegationProbe "$W" "/acme/clicks/segment=0/$chunk" \
	"$WD/get/segment=0/$chunk" analyst yarn "WEBHDFS delegation" "$ANALYST_TOKEN"
dt=$(curl -s -H "Authorization: Bearer $ANALYST_TOKEN" "$HDFS/webhdfs/v1/?op=GETDELEGATIONTOKEN&renewer=analyst" | jq -r .Token.urlString)
expect_eq "delegation over curl: delegation= reads the file" \
	"$(curl -sL "$HDFS/webhdfs/v1/acme/clicks/segment=0/$chunk?op=OPEN&delegation=$dt" | md5sum)" "$(md5sum <"$WD/get/segment=0/$chunk")"
curl -s -X PUT -H "Authorization: Bearer $ANALYST_TOKEN" "$HDFS/webhdfs/v1/?op=CANCELDELEGATIONTOKEN&token=$dt" >/dev/null
code=$(curl -s -o "$WD/dt.err" -w '%{http_code}' "$HDFS/webhdfs/v1/acme/clicks?op=LISTSTATUS&delegation=$dt")
expect_eq "delegation over curl: a cancelled token gets 403 SecurityException carrying InvalidToken" \
	"$code $(jq -r '.RemoteException | "\(.exception) \(.message | split(": ")[1])"' "$WD/dt.err")" \
	"403 SecurityException org.apache.hadoop.security.token.SecretManager\$InvalidToken"
# An admin lists the analyst's live tokens and cancels one by its id, without
# holding the token.
dt2=$(curl -s -H "Authorization: Bearer $ANALYST_TOKEN" "$HDFS/webhdfs/v1/?op=GETDELEGATIONTOKEN&renewer=yarn" | jq -r .Token.urlString)
expect_eq "delegation over curl: a new token reads" \
	"$(curl -s -o /dev/null -w '%{http_code}' "$HDFS/webhdfs/v1/acme/clicks?op=LISTSTATUS&delegation=$dt2")" "200"
"$SILT_BIN" delegation-token list --owner analyst -o json >"$WD/dts.json"
dt2_id=$(jq -r 'map(.id) | max' "$WD/dts.json")
expect_eq "silt delegation-token list: the newest token is the analyst's, renewable by yarn, with no password shown" \
	"$(jq -r "map(select(.id == $dt2_id))[0] | \"\(.owner) \(.renewer) \(has(\"password\"))\"" "$WD/dts.json")" "analyst yarn false"
expect_eq "silt delegation-token list: --owner lists what the whole list has for that owner" \
	"$(jq -r 'length' "$WD/dts.json")" "$("$SILT_BIN" delegation-token list -o json | jq -r 'map(select(.owner == "analyst")) | length')"
check "silt delegation-token cancel ID" "$SILT_BIN" delegation-token cancel "$dt2_id"
expect_eq "silt delegation-token cancel: the token is refused at once" \
	"$(curl -s -o /dev/null -w '%{http_code}' "$HDFS/webhdfs/v1/acme/clicks?op=LISTSTATUS&delegation=$dt2")" "403"
expect_eq "silt delegation-token cancel: an unknown id is not found (exit 1)" \
	"$("$SILT_BIN" delegation-token cancel "$dt2_id" >/dev/null 2>&1; echo $?)" "1"

# --- Where HDFS 3.4 and silt used to differ, as Hadoop's client sees it -------
# Reading at and past the end, opening a directory, paths below a file, xattr
# names, a proxy user and the root's quota: ParityProbe states what
# WebHdfsFileSystem does against HDFS itself (it passes against a
# MiniDFSCluster holding the same tree, for a user who is not its superuser).
wh_probe "hadoop as against hdfs" 12 io.silt.conformance.ParityProbe "$W" "/acme/clicks/segment=0/$chunk" /acme/clicks

# --- Hadoop FileSystem contract tests -----------------------------------------
# AbstractContract{Open,Seek,GetFileStatus,ContentSummary}Test from hadoop-common's
# test-jar, bound to this server by conformance/webhdfs/contract. The head is
# read-only, so the fixtures come from the native API: one stream whose
# segment=0 holds one 1024-byte chunk (the seek tests' seekfile.txt length)
# and a stream zero.dir (a directory to open). Methods that need fixtures of
# their own are @Ignore'd in the subclasses with the reason (docs/webhdfs.md).
"$SILT_BIN" tenant create contract >/dev/null
"$SILT_BIN" stream create contract/fixtures >/dev/null
for i in $(seq 1 16); do printf '%063d\n' "$i"; done | "$SILT_BIN" append contract/fixtures 2>/dev/null
# A stream is a directory: zero.dir is what testOpenReadDir opens.
"$SILT_BIN" stream create contract/zero.dir >/dev/null
echo '{}' | "$SILT_BIN" append contract/zero.dir 2>/dev/null
CT_DIR=segment=0
for _ in $(seq 1 50); do
	ct_ls=$(curl -s "$HDFS/webhdfs/v1/contract/fixtures/$CT_DIR?op=LISTSTATUS&user.name=root")
	[ "$(jq '[.FileStatuses.FileStatus[]?.length] | add // 0' <<<"$ct_ls")" -ge 1024 ] &&
		curl -sf "$HDFS/webhdfs/v1/contract/zero.dir?op=GETFILESTATUS&user.name=root" >/dev/null && break
	sleep 0.2
done
ct_chunk=$(jq -r '.FileStatuses.FileStatus[0].pathSuffix' <<<"$ct_ls")
expect_eq "contract: the seeded fixture is one 1024-byte chunk" "$(jq -r '[.FileStatuses.FileStatus[].length] | map(tostring) | join(" ")' <<<"$ct_ls")" 1024
CT_CONF=$CONF_TMP/contract-conf
mkdir -p "$CT_CONF"
printf '<?xml version="1.0"?>\n<configuration/>\n' >"$CT_CONF/core-site.xml"
cat >"$CT_CONF/contract-test-options.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>fs.contract.test.fs.webhdfs</name><value>webhdfs://127.0.0.1:$HDFS_PORT</value></property>
  <property><name>silt.contract.test.path</name><value>/contract</value></property>
  <property><name>silt.contract.seekfile</name><value>/contract/fixtures/$CT_DIR/$ct_chunk</value></property>
</configuration>
XML
CT_MVN=(mvn -B -q "-Dmaven.repo.local=$SILT_M2" -f "$PWD/conformance/webhdfs/contract/pom.xml" "-Dsilt.contract.conf=$CT_CONF" test)
rm -rf conformance/webhdfs/contract/target/surefire-reports
# Offline once $SILT_M2 has the test jars; online the first time.
HADOOP_USER_NAME=root "${CT_MVN[@]}" -o >"$CONF_TMP/contract.log" 2>&1 ||
	[ -d conformance/webhdfs/contract/target/surefire-reports ] ||
	HADOOP_USER_NAME=root "${CT_MVN[@]}" >"$CONF_TMP/contract.log" 2>&1
ct_results=$(python3 - conformance/webhdfs/contract/target/surefire-reports <<'PY'
import glob, sys, xml.etree.ElementTree as ET
for f in sorted(glob.glob(sys.argv[1] + "/TEST-*.xml")):
    for tc in ET.parse(f).getroot().iter("testcase"):
        cls = tc.get("classname").rsplit(".", 1)[-1]
        bad = tc.find("failure") if tc.find("failure") is not None else tc.find("error")
        if tc.find("skipped") is not None:
            print("skip", cls, tc.get("name"), (tc.find("skipped").get("message") or "").replace("\n", " ")[:160])
        elif bad is not None:
            print("fail", cls, tc.get("name"), (bad.get("message") or bad.get("type") or "").replace("\n", " ")[:200])
        else:
            print("pass", cls, tc.get("name"))
PY
)
if [ -z "$ct_results" ]; then
	fail "contract: surefire produced no reports (see below)"
	tail -20 "$CONF_TMP/contract.log" | sed 's/^/       /'
else
	while read -r verdict cls name why; do
		case $verdict in
		pass) pass "contract: $cls.$name" ;;
		fail) fail "contract: $cls.$name: $why" ;;
		esac
	done <<<"$ct_results"
	# The rest are @Ignore'd with their reason (docs/webhdfs.md lists them);
	# the count keeps a method from being dropped silently.
	expect_eq "contract: methods excluded as not applicable to a read-only store, per class" \
		"$(awk '$1 == "skip" {n[$2]++} END {for (c in n) printf "%s=%d ", c, n[c]}' <<<"$ct_results" | tr ' ' '\n' | sort | xargs)" \
		"TestSiltContentSummary=2 TestSiltGetFileStatus=13 TestSiltOpen=11 TestSiltSeek=11"
	expect_eq "contract: tests run (passed) per class" \
		"$(awk '$1 == "pass" {n[$2]++} END {for (c in n) printf "%s=%d ", c, n[c]}' <<<"$ct_results" | tr ' ' '\n' | sort | xargs)" \
		"TestSiltGetFileStatus=7 TestSiltOpen=8 TestSiltSeek=7"
fi

# --- HdfsCLI (PyPI hdfs) ---------------------------------------------------------
need_pymod hdfs hdfs
if ! venv_has_module hdfs; then
	fail "hdfscli: cannot install hdfs (PyPI)"
else
	check "hdfscli: list, status and read match the native read; a write fails" python3 - "$HDFS" "$WD" <<'PY'
import sys, hdfs
url, wd = sys.argv[1], sys.argv[2]
c = hdfs.InsecureClient(url, user="root")
assert sorted(c.list("/acme/clicks")) == ["_manifest.json", "segment=0", "segment=1"], c.list("/acme/clicks")
assert c.status("/acme/clicks/segment=0")["type"] == "DIRECTORY"
assert c.status("/acme/clicks/nope", strict=False) is None
for s in (0, 1):
    d = f"/acme/clicks/segment={s}"
    chunks = sorted(c.list(d))
    assert chunks and all(n.endswith(".txt") for n in chunks), chunks
    data = b""
    for n in chunks:
        st = c.status(f"{d}/{n}")
        with c.read(f"{d}/{n}") as r:
            body = r.read()
        assert st["type"] == "FILE" and st["length"] == len(body), (n, st, len(body))
        data += body
    assert data == open(f"{wd}/native{s}", "rb").read(), s
    with c.read(f"{d}/{chunks[0]}", offset=5, length=50) as r:
        part = r.read()
    with c.read(f"{d}/{chunks[0]}") as r:
        assert part == r.read()[5:55]
try:
    c.write("/acme/clicks/hdfscli.txt", data=b"x")
except hdfs.HdfsError as e:
    assert "read-only" in str(e), e
else:
    raise AssertionError("write succeeded")
assert c.status("/acme/clicks/hdfscli.txt", strict=False) is None
PY
fi

# --- fsspec --------------------------------------------------------------------
check "fsspec: ls, info, cat, find and open/seek match the native read; writes fail" python3 - "$HDFS_PORT" "$WD" <<'PY'
import sys, fsspec
port, wd = int(sys.argv[1]), sys.argv[2]
fs = fsspec.filesystem("webhdfs", host="127.0.0.1", port=port, user="root")
top = fs.ls("/acme/clicks", detail=False)
assert sorted(top) == ["/acme/clicks/_manifest.json", "/acme/clicks/segment=0", "/acme/clicks/segment=1"], top
assert fs.info("/acme/clicks/segment=0")["type"] == "directory"
for s in (0, 1):
    chunks = sorted(fs.ls(f"/acme/clicks/segment={s}", detail=False))
    assert chunks and all(c.endswith(".txt") for c in chunks), chunks
    data = b""
    for c in chunks:
        body = fs.cat(c)
        assert fs.info(c)["size"] == len(body), (c, fs.info(c), len(body))
        assert fs.info(c)["type"] == "file"
        data += body
    native = open(f"{wd}/native{s}", "rb").read()
    assert data == native, (s, len(data), len(native))
    with fs.open(chunks[0], "rb") as f:
        f.seek(7)
        assert f.read(100) == fs.cat(chunks[0])[7:107]
assert len(fs.find("/acme/clicks")) >= 3
assert not fs.exists("/acme/clicks/nope")
for name, op in [
    ("pipe", lambda: fs.pipe("/acme/clicks/new.txt", b"x")),
    ("mkdir", lambda: fs.mkdir("/acme/clicks/d")),
    ("rm", lambda: fs.rm("/acme/clicks/_manifest.json")),
    ("mv", lambda: fs.mv("/acme/clicks/_manifest.json", "/acme/clicks/m.json")),
]:
    try:
        op()
    except PermissionError:
        continue
    except Exception as e:
        raise AssertionError(f"{name}: want PermissionError, got {type(e).__name__}: {e}")
    raise AssertionError(f"{name} succeeded")
assert fs.exists("/acme/clicks/_manifest.json") and not fs.exists("/acme/clicks/new.txt")
PY

check "fsspec: a bearer token as token= (sent as delegation=)" python3 - "$HDFS_PORT" "$WD" "$ANALYST_TOKEN" <<'PY'
import sys, fsspec
port, wd, token = int(sys.argv[1]), sys.argv[2], sys.argv[3]
fs = fsspec.filesystem("webhdfs", host="127.0.0.1", port=port, token=token)
data = b"".join(fs.cat(c) for c in sorted(fs.ls("/acme/clicks/segment=1", detail=False)))
assert data == open(f"{wd}/native1", "rb").read()
bad = fsspec.filesystem("webhdfs", host="127.0.0.1", port=port, token="silt_not_a_real_token", skip_instance_cache=True)
try:
    bad.ls("/acme/clicks")
except Exception:
    pass
else:
    raise AssertionError("a wrong token was accepted")
PY

# --- Spark ---------------------------------------------------------------------
# pyspark 3.5 bundles the Hadoop 3.3 client (pyspark 4's Hadoop lacks a shaded
# jersey class WebHDFS needs). Skipped, with a note, where it cannot be installed.
need_pymod pyspark 'pyspark==3.5.5'
if ! venv_has_module pyspark; then
	fail "spark: cannot install pyspark 3.5.5 (PyPI)"
else
	check "spark: read.json counts 3000 rows with a segment column; read.text gives the same 3000 lines" env HADOOP_USER_NAME=root python3 - "$W" <<'PY'
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").appName("silt-webhdfs")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.json(sys.argv[1] + "/acme/clicks")
assert "segment" in df.columns and "n" in df.columns, df.columns
assert df.count() == 3000, df.count()
rows = {r["segment"]: r["count"] for r in df.groupBy("segment").count().collect()}
assert set(rows) == {0, 1} and sum(rows.values()) == 3000, rows
assert sorted(r["n"] for r in df.select("n").collect()) == list(range(1, 3001))
# Text: one row per event line, with the same segment column.
import json
tx = spark.read.text(sys.argv[1] + "/acme/clicks")
assert tx.count() == 3000 and "segment" in tx.columns, (tx.count(), tx.columns)
assert sorted(json.loads(r["value"])["n"] for r in tx.select("value").collect()) == list(range(1, 3001))
spark.stop()
PY
fi
unset HADOOP_USER_NAME
# Every refusal above was the client's doing; none may be a server failure.
if grep -q '"webhdfs request failed"' "$SILT_DATA/silt.log"; then
	fail "webhdfs: the server logged request failures"
	grep '"webhdfs request failed"' "$SILT_DATA/silt.log" | head -5 | sed 's/^/       /'
else
	pass "webhdfs: no request failed on the server side"
fi

# --- swebhdfs:// over the shared TLS block (silt serve --dev-tls) --------------
# silt takes PEM only; the client's truststore is a PKCS12 made from the dev CA
# with keytool, named in an ssl-client.xml on the classpath, where Hadoop's
# SSLFactory looks for it.
need keytool default-jdk-headless || return
stop_silt
SILT_DATA=$(mktemp -d /tmp/silt-conf.XXXXXX)
read -r API_PORT S3_PORT NFS_PORT HDFS_PORT <<<"$(free_ports 4)"
"$SILT_BIN" serve --dev-tls --core.dir "$SILT_DATA/data" --api.listen "127.0.0.1:$API_PORT" \
	--s3.listen "127.0.0.1:$S3_PORT" --nfs.listen "127.0.0.1:$NFS_PORT" --webhdfs.listen "127.0.0.1:$HDFS_PORT" --kafka.listen 127.0.0.1:0 \
	--tiering.max_lag 400ms --tiering.interval 100ms >"$SILT_DATA/silt.log" 2>&1 &
SILT_PID=$!
CA=$SILT_DATA/data/tls/ca.pem
for _ in $(seq 1 100); do
	curl -fsS --cacert "$CA" "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
if ! curl -fsS --cacert "$CA" "https://127.0.0.1:$API_PORT/readyz" >/dev/null 2>&1; then
	fail "swebhdfs: silt serve --dev-tls did not start"
	sed 's/^/       /' "$SILT_DATA/silt.log" | tail -20
	return
fi
export SILT_SERVER=https://127.0.0.1:$API_PORT SILT_CA_FILE=$CA
SILT_TOKEN=$(cat "$SILT_DATA/data/root.token")
export SILT_TOKEN
HDFS=https://127.0.0.1:$HDFS_PORT
SW=swebhdfs://127.0.0.1:$HDFS_PORT
WD=$SILT_DATA/wh
mkdir -p "$WD" "$WH_T/tls"
"$SILT_BIN" tenant create acme >/dev/null
"$SILT_BIN" stream create acme/clicks >/dev/null
seq 1 2000 | sed 's/.*/{"tls":&}/' | "$SILT_BIN" append acme/clicks 2>/dev/null
"$SILT_BIN" principal create analyst >/dev/null
"$SILT_BIN" grant analyst read acme >/dev/null
ANALYST_TOKEN=$("$SILT_BIN" token create analyst -o json | jq -r .token)
want_bytes=$(seq 1 2000 | sed 's/.*/{"tls":&}/' | wc -c)
for _ in $(seq 1 50); do
	got=$(curl -s --cacert "$CA" -H "Authorization: Bearer $ANALYST_TOKEN" "$HDFS/webhdfs/v1/acme/clicks?op=GETCONTENTSUMMARY" | jq -r '.ContentSummary.length // 0')
	[ "${got:-0}" -gt "$want_bytes" ] && break # the manifest adds some bytes
	sleep 0.2
done
"$SILT_BIN" read acme/clicks --segment 0 --from 0 >"$WD/native" 2>/dev/null
expect_eq "swebhdfs: the native read over https has every event" "$(wc -l <"$WD/native")" 2000

rm -f "$WH_T/tls/trust.p12"
keytool -importcert -noprompt -alias silt-dev-ca -file "$CA" -keystore "$WH_T/tls/trust.p12" \
	-storetype PKCS12 -storepass silt-conformance >/dev/null 2>&1
cat >"$WH_T/tls/ssl-client.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>ssl.client.truststore.location</name><value>$WH_T/tls/trust.p12</value></property>
  <property><name>ssl.client.truststore.type</name><value>pkcs12</value></property>
  <property><name>ssl.client.truststore.password</name><value>silt-conformance</value></property>
</configuration>
XML
WH_JAVA=(java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$WH_T/tls:$WH_CP")
loc=$(curl -s --cacert "$CA" -o /dev/null -w '%{redirect_url}' -H "Authorization: Bearer $ANALYST_TOKEN" "$HDFS/webhdfs/v1/acme/clicks/_manifest.json?op=OPEN")
check "swebhdfs: the OPEN redirect points at https on the same port" sh -c "printf '%s' '$loc' | grep -q '^https://127.0.0.1:$HDFS_PORT/webhdfs/v1/acme/clicks/_manifest.json?'"
TLS_OAUTH=("${OAUTH[@]}" -D "silt.webhdfs.token=$ANALYST_TOKEN")
export HADOOP_USER_NAME=nobody
fs "${TLS_OAUTH[@]}" -ls -R "$SW/acme/clicks" >"$WD/ls"
check "swebhdfs: FsShell -ls -R lists segment=0, a chunk and _manifest.json" \
	sh -c "grep -q '^d.* $SW/acme/clicks/segment=0\$' '$WD/ls' && grep -q '^-r--r--r--.* $SW/acme/clicks/segment=0/[0-9-]*\.txt\$' '$WD/ls' && grep -q ' $SW/acme/clicks/_manifest.json\$' '$WD/ls'"
# Without the truststore the dev CA is unknown, and the client must refuse.
if java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$WH_CP" org.apache.hadoop.fs.FsShell "${TLS_OAUTH[@]}" -ls "$SW/acme/clicks" >/dev/null 2>"$WD/notrust.err"; then
	fail "swebhdfs: without the truststore the certificate is refused"
else
	check "swebhdfs: without the truststore the certificate is refused" grep -q 'PKIX\|SSLHandshake\|certification path' "$WD/notrust.err"
fi
fs "${TLS_OAUTH[@]}" -cat "$SW/acme/clicks/segment=0/*.txt" >"$WD/cat"
check "swebhdfs: FsShell -cat of segment=0 = native read over https" cmp "$WD/cat" "$WD/native"
tls_chunk=$(sed -n "s|^-r.* $SW/acme/clicks/segment=0/||p" "$WD/ls" | head -1)
fs "${TLS_OAUTH[@]}" -get "$SW/acme/clicks/segment=0/$tls_chunk" "$WD/chunk"
curl -sL --cacert "$CA" -H "Authorization: Bearer $ANALYST_TOKEN" "$HDFS/webhdfs/v1/acme/clicks/segment=0/$tls_chunk?op=OPEN" >"$WD/chunk.curl"
check "swebhdfs: FsShell -get of a chunk = curl over https following the redirect" sh -c "[ -s '$WD/chunk' ] && cmp '$WD/chunk' '$WD/chunk.curl'"
if fs "${TLS_OAUTH[@]}" -mkdir "$SW/acme/clicks/newdir"; then fail "swebhdfs: -mkdir refused"; else
	check "swebhdfs: -mkdir refused as read-only" grep -q 'read-only' "$WD/fs.err"
fi
wh_probe "swebhdfs delegation" 8 io.silt.conformance.DelegationProbe "$SW" "/acme/clicks/segment=0/$tls_chunk" \
	"$WD/chunk" analyst analyst "SWEBHDFS delegation" "$ANALYST_TOKEN"
unset HADOOP_USER_NAME SILT_CA_FILE
if grep -q '"webhdfs request failed"' "$SILT_DATA/silt.log"; then
	fail "swebhdfs: the server logged request failures"
	grep '"webhdfs request failed"' "$SILT_DATA/silt.log" | head -5 | sed 's/^/       /'
else
	pass "swebhdfs: no request failed on the server side"
fi
