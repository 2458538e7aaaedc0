package nfs

import (
	"errors"
	"time"

	gonfs "github.com/silt-io/silt/gateways/nfs/internal/gonfs"
	"github.com/silt-io/silt/internal/metrics"
)

// UseMetrics counts the head's calls in the request series every head
// shares (op is the procedure, "nfs.READ", "mount.MOUNT"…). Call it before
// Serve; without it they are kept but exported nowhere. Open connections
// are counted by the connection admission silt serve puts in front of
// every head (silt_connections{head="nfs"}).
func (s *Server) UseMetrics(h *metrics.Head) { s.met = h }

// observe is gonfs's Observe hook.
func (s *Server) observe(proc string, took time.Duration, sent int64, err error) {
	s.met.Observe(proc, statusClass(err), sent, took)
}

// statusClass sorts an answer into the status classes of every head: an
// NFS status that says the server failed (an I/O error, a server fault,
// "try again later") is a server error, and so is a failure below NFS (a
// reply that could not be built or sent); every other error status, and
// an RPC-level refusal of a malformed call, is the client's.
func statusClass(err error) string {
	if err == nil {
		return metrics.StatusOK
	}
	var st *gonfs.NFSStatusError
	if errors.As(err, &st) {
		switch st.NFSStatus {
		case gonfs.NFSStatusIO, gonfs.NFSStatusServerFault, gonfs.NFSStatusJukebox:
			return metrics.StatusServerError
		}
		return metrics.StatusClientError
	}
	var rpc gonfs.RPCError
	if errors.As(err, &rpc) {
		return metrics.StatusClientError
	}
	return metrics.StatusServerError
}
