package nfs

import (
	"encoding/binary"
	"net"

	"github.com/willscott/go-nfs-client/nfs/rpc"
)

// Patched in: upstream ignored the credential of every call, and gave
// the Handler no way to see it. Each call's credential is now checked
// before the call is dispatched, and handed to the Handler as a Caller
// with the connection it came on (FromHandle, MountRequest, Exports), so
// that the Handler can decide per call whom it serves. Upstream's
// mount-time flavor list was never enforced either; it still is not,
// beyond refusing flavors this server cannot read.

// Caller is who sent a call: the connection it came on and the
// credential it carries. An AUTH_SYS uid and gid are whatever the client
// claims; only the connection's source address and port are facts.
type Caller struct {
	Conn   net.Conn
	Flavor AuthFlavor
	// UID and GID are the AUTH_SYS credential's; 0 for AUTH_NONE.
	UID, GID uint32
	// Note is where the Handler records whom a call acted as and on
	// which path, for Observe (patched in); one per call.
	Note *CallNote
}

// CallNote is what the Handler learned about a call (patched in).
type CallNote struct {
	Principal string
	// Path is the file system path the call's handle named.
	Path string
}

// RFC 5531's limits on an AUTH_SYS credential (authsys_parms).
const (
	maxMachineName = 255
	maxAuxGIDs     = 16
)

// parseCaller checks a call's credential. Like libntirpc (nfs-ganesha's
// RPC layer), an AUTH_SYS body that does not decode is AUTH_BADCRED and
// a flavor that is not served is AUTH_REJECTEDCRED, both as MSG_DENIED
// replies.
func parseCaller(c net.Conn, cred rpc.Auth) (Caller, error) {
	switch AuthFlavor(cred.Flavor) {
	case AuthFlavorNull:
		return Caller{Conn: c, Flavor: AuthFlavorNull}, nil
	case AuthFlavorUnix:
		uid, gid, ok := parseAuthSys(cred.Body)
		if !ok {
			return Caller{}, &AuthError{AuthStatBadCred}
		}
		return Caller{Conn: c, Flavor: AuthFlavorUnix, UID: uid, GID: gid}, nil
	}
	return Caller{}, &AuthError{AuthStatRejectedCred}
}

// parseAuthSys decodes authsys_parms: stamp, machinename<255>, uid, gid,
// gids<16>. Bytes after it are ignored, as libntirpc does. It runs for
// every call, so it reads the body in place.
func parseAuthSys(b []byte) (uid, gid uint32, ok bool) {
	if len(b) < 8 {
		return 0, 0, false
	}
	n := binary.BigEndian.Uint32(b[4:])
	if n > maxMachineName {
		return 0, 0, false
	}
	at := 8 + int(n+(4-n%4)%4) // uid, after the padded machine name
	if len(b) < at+12 {
		return 0, 0, false
	}
	gids := binary.BigEndian.Uint32(b[at+8:])
	if gids > maxAuxGIDs || len(b) < at+12+4*int(gids) {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(b[at:]), binary.BigEndian.Uint32(b[at+4:]), true
}
