package nfs

import (
	"errors"
	"path"
	"strings"
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
func (s *Server) observe(c gonfs.Call, took time.Duration, sent int64, err error) {
	class := statusClass(err)
	s.met.Observe(c.Proc, class, sent, took)
	if s.calls == nil {
		return
	}
	call := Call{Proc: c.Proc, Class: class, Bytes: sent, Took: took, Principal: c.Note.Principal}
	if c.Conn != nil {
		call.Client = c.Conn.RemoteAddr().String()
	}
	var st *gonfs.NFSStatusError
	if errors.As(err, &st) {
		call.Status = int(st.NFSStatus)
	}
	parts := strings.SplitN(strings.TrimPrefix(c.Note.Path, "/"), "/", 3)
	call.Tenant = parts[0]
	if len(parts) > 1 {
		call.Stream = parts[1]
	}
	s.calls(call)
}

// Call is one answered NFS or MOUNT call, for the observer UseCalls sets.
type Call struct {
	Proc, Class string
	// Status is the NFS status (0 is NFS3_OK).
	Status                    int
	Bytes                     int64
	Took                      time.Duration
	Client                    string
	Principal, Tenant, Stream string
}

// UseCalls makes the head tell obs of every answered call (introspection
// events). obs must not block. Call it before Serve.
func (s *Server) UseCalls(obs func(Call)) { s.calls = obs }

// noteCall records whom a call acts as and the view path it names
// (root, the export's, joined with rel), for observe.
func noteCall(c gonfs.Caller, principal, root string, rel []string) {
	if c.Note == nil {
		return
	}
	c.Note.Principal = principal
	c.Note.Path = path.Join(append([]string{root}, rel...)...)
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
