# NFS: another user of the host gets nothing through the NFS head that
# the anonymous principal does not have, whatever AUTH_SYS credential
# libnfs is told to send (uid=/gid= in the URL). libnfs run as root binds
# a reserved source port, run as nobody it cannot: a `secure` export
# tells them apart, and only there does a uid map name a principal.
need nfs-ls libnfs-utils || return
need setpriv util-linux || return

# as_nobody CMD...: run CMD as the unprivileged user nobody.
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
SN=(timeout 20)
# snurl PATH [QUERY]: a libnfs URL for PATH on the running silt.
snurl() { echo "nfs://127.0.0.1$1?version=3&nfsport=$NFS_PORT&mountport=$NFS_PORT$2"; }
# The credentials a client may claim; none of them is believed by default.
CREDS=("" "&uid=0&gid=0" "&uid=1000&gid=1000" "&uid=65534&gid=65534")

# seed_nfs: tenants acme (alice's), other (nobody's) and pub (granted to
# anonymous), one chunk each in tier 2; sets SECRET, CLICKS and NEWS to
# their chunk paths.
seed_nfs() {
	local ts s
	for ts in acme/clicks other/secret pub/news; do
		"$SILT_BIN" tenant create "${ts%/*}" >/dev/null
		"$SILT_BIN" stream create "$ts" >/dev/null
		echo "the $ts event" | "$SILT_BIN" append "$ts" >/dev/null 2>&1
	done
	"$SILT_BIN" principal create alice >/dev/null
	"$SILT_BIN" grant alice read acme >/dev/null
	"$SILT_BIN" grant anonymous read pub/news >/dev/null
	for _ in $(seq 1 100); do
		SECRET=$(cd "$SILT_DATA/data/tier2" 2>/dev/null && find other/secret -name '*.txt' 2>/dev/null | head -1)
		CLICKS=$(cd "$SILT_DATA/data/tier2" 2>/dev/null && find acme/clicks -name '*.txt' 2>/dev/null | head -1)
		NEWS=$(cd "$SILT_DATA/data/tier2" 2>/dev/null && find pub/news -name '*.txt' 2>/dev/null | head -1)
		[ -n "$SECRET" ] && [ -n "$CLICKS" ] && [ -n "$NEWS" ] && visible "$SECRET" "$CLICKS" "$NEWS" && break
		sleep 0.1
	done
	for s in SECRET CLICKS NEWS; do
		[ -n "${!s}" ] && visible "${!s}" || { fail "nfs: $s reached tier 2 and the view"; return 1; }
	done
}

# visible PATH...: every PATH is in the view, as root sees it through
# WebHDFS (a chunk file is in tier 2 a moment before the catalog has it).
visible() {
	local p
	for p in "$@"; do
		curl -fsS -o /dev/null -H "Authorization: Bearer $SILT_TOKEN" "$HDFS/webhdfs/v1/$p?op=GETFILESTATUS" 2>/dev/null || return 1
	done
}

# reads WHO PATH QUERY: "yes" if WHO (root or nobody) reads the chunk's
# event over NFS, else "no".
reads() {
	local run=()
	[ "$1" = nobody ] && run=(as_nobody)
	if "${run[@]}" "${SN[@]}" nfs-cat "$(snurl "/$2" "$3")" 2>/dev/null | grep -q "event"; then echo yes; else echo no; fi
}

# tenants WHO QUERY: the tenants nfs-ls shows WHO at /.
tenants() {
	local run=()
	[ "$1" = nobody ] && run=(as_nobody)
	"${run[@]}" "${SN[@]}" nfs-ls "$(snurl / "$2")" 2>/dev/null | awk '{print $6}' | sort | tr '\n' ' '
}

# The default export: / as anonymous, to loopback.
start_silt --tiering.max_lag 400ms --tiering.interval 100ms || return
if seed_nfs; then
	check "nfs default: the default config binds the export to anonymous" \
		sh -c "'$SILT_BIN' serve --print-config 2>/dev/null | grep -q 'path=/;principal=anonymous'"
	for who in nobody root; do
		for q in "${CREDS[@]}"; do
			cred=${q:-"(AUTH_SYS of the caller)"}
			expect_eq "nfs default, $who $cred: another tenant's chunk is not readable" "$(reads "$who" "$SECRET" "$q")" no
			expect_eq "nfs default, $who $cred: alice's chunk is not readable" "$(reads "$who" "$CLICKS" "$q")" no
			expect_eq "nfs default, $who $cred: what anonymous may read is readable" "$(reads "$who" "$NEWS" "$q")" yes
			expect_eq "nfs default, $who $cred: / lists anonymous's tenants only" "$(tenants "$who" "$q")" "pub "
		done
	done
	out=$(as_nobody "${SN[@]}" nfs-cat "$(snurl "/$SECRET" "&uid=0&gid=0")" 2>&1)
	check "nfs default: nobody claiming uid 0 is refused with NFS3ERR_ACCES or MNT3ERR_ACCES" \
		grep -qE 'NFS3ERR_ACCES|MNT3ERR_ACCES' <<<"$out"
fi
stop_silt

# A secure export with a uid map: root's clients are believed, nobody's
# are refused, whatever they claim.
start_silt --tiering.max_lag 400ms --tiering.interval 100ms \
	--nfs.exports 'path=/;principal=anonymous;allow=127.0.0.1/32;secure;no_root_squash;map=0:root|1000:alice' || return
if seed_nfs; then
	for q in "${CREDS[@]}"; do
		cred=${q:-"(AUTH_SYS of the caller)"}
		expect_eq "nfs secure, nobody $cred: another tenant's chunk is not readable" "$(reads nobody "$SECRET" "$q")" no
		expect_eq "nfs secure, nobody $cred: not even anonymous's grants (unreserved port)" "$(reads nobody "$NEWS" "$q")" no
	done
	out=$(as_nobody "${SN[@]}" nfs-ls "$(snurl / "&uid=0&gid=0")" 2>&1)
	check "nfs secure, nobody: MNT from an unreserved port → MNT3ERR_ACCES" grep -q MNT3ERR_ACCES <<<"$out"
	# libnfs as root binds a reserved port and sends the uid it is given.
	expect_eq "nfs secure, root uid=0 (mapped to root): another tenant's chunk" "$(reads root "$SECRET" "&uid=0&gid=0")" yes
	expect_eq "nfs secure, root uid=0 (mapped to root): / lists every tenant" "$(tenants root "&uid=0&gid=0")" "acme other pub silt-system "
	expect_eq "nfs secure, root uid=1000 (mapped to alice): alice's chunk" "$(reads root "$CLICKS" "&uid=1000&gid=1000")" yes
	expect_eq "nfs secure, root uid=1000 (mapped to alice): not another tenant's" "$(reads root "$SECRET" "&uid=1000&gid=1000")" no
	expect_eq "nfs secure, root uid=1000 (mapped to alice): / lists acme" "$(tenants root "&uid=1000&gid=1000")" "acme "
	expect_eq "nfs secure, root uid=4242 (unmapped, anonymous): / lists pub" "$(tenants root "&uid=4242&gid=4242")" "pub "
	expect_eq "nfs secure, root uid=4242 (unmapped, anonymous): not another tenant's" "$(reads root "$SECRET" "&uid=4242&gid=4242")" no
fi
stop_silt

# Validate refuses a map on an export without secure, and says why.
out=$("$SILT_BIN" serve --print-config --nfs.exports 'path=/;principal=anonymous;map=0:root' 2>&1)
check "nfs: a map without secure is refused, saying why" grep -q "map needs secure" <<<"$out"
