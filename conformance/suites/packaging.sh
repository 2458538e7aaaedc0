# The files in packaging/: silt accepts the example configuration as it is,
# the systemd unit passes `systemd-analyze verify` without a single warning
# and keeps its sandbox, and the sysusers entry creates the silt user. The
# systemd tools are used where the machine has them; where it does not,
# the suite says which checks did not run.
PK=$CONF_TMP/packaging
mkdir -p "$PK"

# The example config: accepted (--print-config exits 2 for a config silt
# would refuse, 0 otherwise), and the data directory is the one the unit
# gives the silt user.
if "$SILT_BIN" serve --config packaging/silt.yaml --print-config >"$PK/effective.yaml" 2>"$PK/print.err"; then
	pass "packaging: silt serve --config packaging/silt.yaml --print-config exits 0"
else
	fail "packaging: silt serve --config packaging/silt.yaml --print-config: $(cat "$PK/print.err")"
fi
pk_dir=$(awk '/^core:/ {c = 1; next} /^[^ ]/ {c = 0} c && $1 == "dir:" {print $2; exit}' "$PK/effective.yaml")
expect_eq "packaging: the example's core.dir is the unit's ReadWritePaths" \
	"$pk_dir" "$(sed -n 's/^ReadWritePaths=//p' packaging/silt.service)"

# The properties the unit is there for; a later edit must not lose them.
for pk_line in User=silt Group=silt StateDirectory=silt LimitNOFILE=1048576 ProtectSystem=strict \
	NoNewPrivileges=true PrivateTmp=true ProtectHome=true 'ExecStart=/usr/local/bin/silt serve --config /etc/silt/silt.yaml'; do
	check "packaging: silt.service has $pk_line" grep -qxF "$pk_line" packaging/silt.service
done

# systemd-analyze verify also checks that ExecStart's program exists, so it
# verifies a copy that runs the silt just built. It exits 0 on warnings such
# as an unknown or misspelt key: any output at all fails the check.
if command -v systemd-analyze >/dev/null 2>&1; then
	sed "s#^ExecStart=/usr/local/bin/silt #ExecStart=$SILT_BIN #" packaging/silt.service >"$PK/silt.service"
	(cd "$PK" && systemd-analyze verify "$PK/silt.service") >"$PK/verify.out" 2>&1
	pk_rc=$?
	if [ "$pk_rc" -eq 0 ] && [ ! -s "$PK/verify.out" ]; then
		pass "packaging: systemd-analyze verify silt.service: no errors, no warnings"
	else
		fail "packaging: systemd-analyze verify silt.service (exit $pk_rc):"
		sed 's/^/       /' "$PK/verify.out" | head -20
	fi
else
	echo "  note systemd-analyze verify not run: no systemd-analyze on this machine (Debian: systemd)"
fi

if command -v systemd-sysusers >/dev/null 2>&1; then
	mkdir -p "$PK/root/etc"
	if systemd-sysusers --root="$PK/root" "$PWD/packaging/silt.sysusers" >"$PK/sysusers.out" 2>&1; then
		check "packaging: silt.sysusers creates the silt user, home /var/lib/silt, no login" \
			grep -qE '^silt:x:[0-9]+:[0-9]+:[^:]*:/var/lib/silt:/usr/sbin/nologin$' "$PK/root/etc/passwd"
	else
		fail "packaging: systemd-sysusers silt.sysusers: $(head -5 "$PK/sysusers.out")"
	fi
else
	echo "  note silt.sysusers not checked: no systemd-sysusers on this machine (Debian: systemd)"
fi
