# Data directory: nothing in it opens for another OS user, whatever the
# umask silt was started under, and no S3 secret sits in it in clear — a
# copy of it, as a backup would take, is grepped for one. Another user is
# `nobody` (setpriv), so this part runs as root.
need setpriv util-linux || return 0
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# A umask that lets everything through: only silt's own modes count.
OLD_UMASK=$(umask)
umask 000
start_silt --tiering.max_lag 200ms --tiering.max_chunk_bytes 256 --tiering.interval 50ms
umask "$OLD_UMASK"
DATA=$SILT_DATA/data
# mktemp made the data dir's parent 0700; open it, so that nobody is kept
# out by the data dir itself, not by where the suite put it.
chmod 755 "$SILT_DATA"

AUTH=(-H "Authorization: Bearer $SILT_TOKEN")
curl -fsS "${AUTH[@]}" -d '{"name":"acme"}' "$API/v1/tenants" >/dev/null
curl -fsS "${AUTH[@]}" -d '{"name":"clicks","segments":2}' "$API/v1/tenants/acme/streams" >/dev/null
for i in $(seq 1 40); do
	curl -fsS "${AUTH[@]}" --data-binary "{\"n\":$i}" "$API/v1/tenants/acme/streams/clicks/events?key=k$((i % 5))" >/dev/null
done
for _ in $(seq 1 100); do
	[ -n "$(find "$DATA/tier2" -name '*.txt' 2>/dev/null)" ] && break
	sleep 0.1
done
read -r AK SK < <("$SILT_BIN" s3-key create root -o json | jq -r '"\(.access_key_id) \(.secret_access_key)"')
expect_eq "datadir: the new S3 key signs requests (curl --aws-sigv4)" \
	"$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 'aws:amz:us-east-1:s3' -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --user "$AK:$SK" "$S3/acme?list-type=2")" 200

check "datadir: it holds a catalog, tier-1 logs, tier-2 chunks, keys and the root token" sh -c "
	test -n \"\$(find '$DATA/catalog' -name '*.log')\" && test -n \"\$(find '$DATA/logs' -name '*.log')\" &&
	test -n \"\$(find '$DATA/tier2' -name '*.txt')\" && test -f '$DATA/keys/secrets.key' && test -f '$DATA/root.token'"
expect_eq "datadir: every directory is 0700 and every file 0600 (started under umask 000)" \
	"$(find "$DATA" \( -type d ! -perm 700 \) -o \( -type f ! -perm 600 \) -printf '%m %p\n')" ""

# The harness can succeed: what is open beside the data dir opens.
echo readable >"$SILT_DATA/control"
chmod 644 "$SILT_DATA/control"
expect_eq "datadir: nobody reads a 0644 file beside the data dir (control)" "$(as_nobody cat "$SILT_DATA/control" 2>&1)" readable
check "datadir: nobody lists the data dir's parent (control)" sh -c "setpriv --reuid=65534 --regid=65534 --clear-groups ls '$SILT_DATA' | grep -qx data"
tried=0
opened=()
while IFS= read -r -d '' p; do
	tried=$((tried + 1))
	if [ -d "$p" ]; then
		as_nobody ls "$p" >/dev/null 2>&1 && opened+=("ls $p")
	else
		as_nobody cat "$p" >/dev/null 2>&1 && opened+=("cat $p")
	fi
done < <(find "$DATA" -print0)
expect_eq "datadir: none of its $tried files and directories opens for nobody" "${opened[*]}" ""
check "datadir: nobody cannot even stat the catalog" sh -c "! setpriv --reuid=65534 --regid=65534 --clear-groups stat '$DATA/catalog' >/dev/null 2>&1"

COPY=$CONF_TMP/datadir-copy
rm -rf "$COPY"
cp -a "$DATA" "$COPY"
check "datadir: grep finds no S3 secret in a copy (as issued)" sh -c "! grep -rqaF -- '$SK' '$COPY'"
check "datadir: nor its bytes raw, in hex or re-encoded" python3 - "$SK" "$COPY" <<'PY'
import base64, binascii, os, sys
secret, root = sys.argv[1], sys.argv[2]
raw = base64.b64decode(secret)
forms = {"raw": raw, "hex": binascii.hexlify(raw), "HEX": binascii.hexlify(raw).upper(),
         "base64url": base64.urlsafe_b64encode(raw), "hex of text": binascii.hexlify(secret.encode()),
         "base64 of text": base64.b64encode(secret.encode())}
found = []
for d, _, files in os.walk(root):
    for f in files:
        b = open(os.path.join(d, f), "rb").read()
        found += [f"{os.path.join(d, f)}: {n}" for n, v in forms.items() if v in b]
print("\n".join(found))
sys.exit(1 if found else 0)
PY
rm -rf "$COPY"

# Restart on the same data dir: the wrong secrets key refuses to start;
# an exposed data dir is reported with the fix, and left as it is.
kill "$SILT_PID" 2>/dev/null
wait "$SILT_PID" 2>/dev/null
SILT_PID=
read -r P1 P2 P3 P4 <<<"$(free_ports 4)"
serve_on_data() {
	"$SILT_BIN" serve --core.dir "$DATA" --api.listen "127.0.0.1:$P1" --s3.listen "127.0.0.1:$P2" \
		--nfs.listen "127.0.0.1:$P3" --webhdfs.listen "127.0.0.1:$P4" --kafka.listen 127.0.0.1:0 "$@"
}
head -c 32 /dev/urandom >"$CONF_TMP/other.key"
chmod 600 "$CONF_TMP/other.key"
timeout 30 bash -c "$(declare -f serve_on_data); SILT_BIN='$SILT_BIN' DATA='$DATA' P1=$P1 P2=$P2 P3=$P3 P4=$P4 serve_on_data --auth.secrets_key_file '$CONF_TMP/other.key'" >"$CONF_TMP/wrongkey.log" 2>&1
expect_eq "datadir: another secrets key refuses to start (exit 1)" "$?" 1
check "datadir: and says why" grep -q "S3 secrets cannot be decrypted.*holds another key" "$CONF_TMP/wrongkey.log"
rm -f "$CONF_TMP/other.key"

chmod 755 "$DATA"
chmod 644 "$DATA/root.token"
serve_on_data >"$SILT_DATA/restart.log" 2>&1 &
SILT_PID=$!
for _ in $(seq 1 100); do
	curl -fsS "http://127.0.0.1:$P1/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
# The check runs beside the start, not before it.
for _ in $(seq 1 100); do
	grep -q "readable by other OS users" "$SILT_DATA/restart.log" && break
	sleep 0.1
done
check "datadir: an exposed data dir is warned about at start" grep -q "readable by other OS users" "$SILT_DATA/restart.log"
check "datadir: the warning names the fix" grep -qF "chmod -R go-rwx $DATA" "$SILT_DATA/restart.log"
expect_eq "datadir: and silt leaves the operator's modes alone" "$(stat -c %a "$DATA" "$DATA/root.token" | tr '\n' ' ')" "755 644 "
expect_eq "datadir: the S3 key still signs after the restart" \
	"$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 'aws:amz:us-east-1:s3' -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --user "$AK:$SK" "http://127.0.0.1:$P2/acme?list-type=2")" 200
