# Security regressions: replays the hardening checks (a client that tries to
# take the server down, another OS user on the same host, forged NFS
# credentials, tokens and writer ids that are not one's own, requests that
# can never succeed) against a real `silt serve`. Each area's checks live in
# conformance/security/<area>.sh and start the server they need.
for part in conformance/security/*.sh; do
	[ -f "$part" ] || continue
	echo "-- $(basename "$part" .sh)"
	source "$part"
	stop_silt
done
