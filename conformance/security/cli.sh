# CLI: no secret in help, no terminal control from event data, one server
# per data dir, and a user told when the CLI acts as anonymous.
start_silt || return

SECRET=silt_conformance_secret_never_printed
out=$(SILT_TOKEN=$SECRET "$SILT_BIN" --help 2>&1; SILT_TOKEN=$SECRET "$SILT_BIN" tenant list --help 2>&1)
if grep -q "$SECRET" <<<"$out"; then fail "cli: --help prints SILT_TOKEN's value"; else pass "cli: --help never prints SILT_TOKEN's value"; fi
check "cli: --help says the token comes from SILT_TOKEN" grep -q '(from SILT_TOKEN)' <<<"$out"

# An event that would retitle the terminal and clear the screen is shown
# quoted, not obeyed, when read on a terminal (script gives it a pty).
need script bsdutils || return
"$SILT_BIN" tenant create evil >/dev/null
"$SILT_BIN" stream create evil/esc >/dev/null
printf '\033]0;pwned\007\033[2J\n' | "$SILT_BIN" append evil/esc 2>/dev/null
script -qec "'$SILT_BIN' read evil/esc" /dev/null >$CONF_TMP/tty-read 2>&1
if grep -q $'\033' $CONF_TMP/tty-read; then fail "cli: escape sequences reach the terminal"; else
	check "cli: escape sequences are shown quoted on a terminal" grep -q 'x1b' $CONF_TMP/tty-read
fi
"$SILT_BIN" stream create evil/bin --encoding framed >/dev/null
printf '\0\0\0\2\033c' | "$SILT_BIN" append evil/bin --input framed 2>/dev/null
script -qec "'$SILT_BIN' read evil/bin -o raw" /dev/null >$CONF_TMP/tty-raw 2>&1
check "cli: a framed stream is not written raw to a terminal" grep -q 'not to a terminal' $CONF_TMP/tty-raw

# A second server on the data dir in use is refused, naming the first.
read -r P1 P2 P3 P4 <<<"$(free_ports 4)"
"$SILT_BIN" serve --core.dir "$SILT_DATA/data" --api.listen 127.0.0.1:$P1 --s3.listen 127.0.0.1:$P2 \
	--nfs.listen 127.0.0.1:$P3 --webhdfs.listen 127.0.0.1:$P4 --kafka.listen 127.0.0.1:0 >$CONF_TMP/second 2>&1
expect_eq "cli: a second serve on the data dir exits 1" "$?" 1
check "cli: it names the first server's pid" grep -q "in use by another silt serve (pid $SILT_PID)" $CONF_TMP/second
expect_eq "cli: the lock file is the owner's only" "$(stat -c %a "$SILT_DATA/data/silt.pid")" 600

# Without a token the CLI says it acts as anonymous.
(cd "$CONF_TMP" && SILT_TOKEN= "$SILT_BIN" tenant list >/dev/null 2>$CONF_TMP/anon)
check "cli: no token: the CLI says it acts as anonymous" grep -q 'acting as anonymous' $CONF_TMP/anon
