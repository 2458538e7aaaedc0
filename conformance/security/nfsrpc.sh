# NFS requests that can never succeed get NFS's answer, sent raw (no stock
# client sends them: libnfs and the kernel split paths on '/' and clamp
# offsets): a LOOKUP of one name holding '/' is refused, never walked as
# a path, and a READ at offset 2^64-1 answers 0 bytes and EOF, not
# NFS3ERR_IO.
start_silt --tiering.max_lag 400ms --tiering.interval 100ms \
	--nfs.exports 'path=/;principal=root;allow=127.0.0.1/32' || return
"$SILT_BIN" tenant create acme >/dev/null
"$SILT_BIN" stream create acme/clicks >/dev/null
echo '{"n":1}' | "$SILT_BIN" append acme/clicks >/dev/null 2>&1
RPC=(timeout 30 python3 conformance/security/tools/nfsrpc.py "$NFS_PORT" /)
for _ in $(seq 1 100); do
	[ "$("${RPC[@]}" lookup acme clicks _manifest.json 2>/dev/null)" = "status 0" ] && break
	sleep 0.1
done
expect_eq "nfs raw: LOOKUP of the manifest, one component at a time" "$("${RPC[@]}" lookup acme clicks _manifest.json 2>&1)" "status 0"
# 13 = NFS3ERR_ACCES: the name cannot exist in any directory.
expect_eq "nfs raw: LOOKUP 'clicks/_manifest.json' in /acme is refused, not walked" \
	"$("${RPC[@]}" lookup acme 'clicks/_manifest.json' 2>&1)" "status 13"
expect_eq "nfs raw: LOOKUP 'acme/clicks' at the root is refused, not walked" \
	"$("${RPC[@]}" lookup 'acme/clicks' 2>&1)" "status 13"
expect_eq "nfs raw: READ at offset 2^64-1 → 0 bytes and EOF" \
	"$("${RPC[@]}" read acme clicks _manifest.json 18446744073709551615 2>&1)" "status 0 count 0 eof 1"
expect_eq "nfs raw: READ at offset 2^63 → 0 bytes and EOF" \
	"$("${RPC[@]}" read acme clicks _manifest.json 9223372036854775808 2>&1)" "status 0 count 0 eof 1"
check "nfs raw: the server is still up" curl -fsS "$API/readyz"
