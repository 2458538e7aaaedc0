package nfs

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net"
	"strings"
	"time"
)

// Server is a handle to the listening NFS server.
type Server struct {
	Handler
	ID [8]byte
	context.Context
	// MaxInflight bounds the requests of one connection served at once
	// (patched in); 0 means DefaultMaxInflight.
	MaxInflight int
	// Observe, when set, is called after each request is answered with
	// its procedure's name ("nfs.READ", "mount.MOUNT", "unknown"), how long
	// it took from its arrival, the bytes of the reply written, and the
	// error it was answered with or that failed it, nil for success
	// (patched in, for metrics).
	Observe func(c Call, took time.Duration, sent int64, err error)
	// IdleTimeout, when positive, closes a connection that has had no
	// request in flight and received none for that long, or that has
	// left a reply unread for that long (patched in).
	IdleTimeout time.Duration
	// ConnState, when set, is told when a connection starts serving a
	// request after having none in flight, when its last request in
	// flight is answered, and when it is closed for idleness (patched
	// in, so that connection admission knows which connections are idle).
	ConnState func(net.Conn, ConnState)
}

// ConnState is what Server.ConnState reports about a connection.
type ConnState int

const (
	// ConnActive: the connection has a request in flight.
	ConnActive ConnState = iota
	// ConnIdle: its last request in flight is answered.
	ConnIdle
	// ConnIdleClosed: it is being closed after IdleTimeout.
	ConnIdleClosed
)

// Call is an answered call, for Observe (patched in): its procedure's
// name, the connection it came on and what the Handler noted of it.
type Call struct {
	Proc string
	Conn net.Conn
	Note CallNote
}

// procName names a call for Observe.
func procName(prog, proc uint32) string {
	switch prog {
	case nfsServiceID:
		if proc <= uint32(NFSProcedureCommit) {
			return "nfs." + strings.ToUpper(NFSProcedure(proc).String())
		}
	case mountServiceID:
		if proc <= uint32(MountProcExport) {
			return "mount." + strings.ToUpper(MountProcedure(proc).String())
		}
	}
	return "unknown"
}

func (s *Server) maxInflight() int {
	if s.MaxInflight > 0 {
		return s.MaxInflight
	}
	return DefaultMaxInflight
}

// RegisterMessageHandler registers a handler for a specific
// XDR procedure.
func RegisterMessageHandler(protocol uint32, proc uint32, handler HandleFunc) error {
	if registeredHandlers == nil {
		registeredHandlers = make(map[registeredHandlerID]HandleFunc)
	}
	for k := range registeredHandlers {
		if k.protocol == protocol && k.proc == proc {
			return errors.New("already registered")
		}
	}
	id := registeredHandlerID{protocol, proc}
	registeredHandlers[id] = handler
	return nil
}

// HandleFunc represents a handler for a specific protocol message.
type HandleFunc func(ctx context.Context, w *response, userHandler Handler) error

// TODO: store directly as a uint64 for more efficient lookups
type registeredHandlerID struct {
	protocol uint32
	proc     uint32
}

var registeredHandlers map[registeredHandlerID]HandleFunc

// Serve listens on the provided listener port for incoming client requests.
func (s *Server) Serve(l net.Listener) error {
	defer l.Close()
	baseCtx := context.Background()
	if s.Context != nil {
		baseCtx = s.Context
	}
	if bytes.Equal(s.ID[:], []byte{0, 0, 0, 0, 0, 0, 0, 0}) {
		if _, err := rand.Reader.Read(s.ID[:]); err != nil {
			return err
		}
	}

	var tempDelay time.Duration

	for {
		conn, err := l.Accept()
		if err != nil {
			// Patched: upstream retried only timeouts, so running out of
			// file descriptors (EMFILE) ended Serve. Temporary errors
			// pass, as net/http's Server.Serve lets them.
			if te, ok := err.(interface{ Temporary() bool }); ok && te.Temporary() {
				Log.Errorf("accept failed, retrying: %v", err)
				if tempDelay == 0 {
					tempDelay = 5 * time.Millisecond
				} else {
					tempDelay *= 2
				}
				if max := 1 * time.Second; tempDelay > max {
					tempDelay = max
				}
				time.Sleep(tempDelay)
				continue
			}
			return err
		}
		tempDelay = 0
		c := s.newConn(conn)
		go c.serve(baseCtx)
	}
}

func (s *Server) newConn(nc net.Conn) *conn {
	c := &conn{
		Server: s,
		Conn:   nc,
	}
	return c
}

// TODO: keep an immutable map for each server instance to have less
// chance of races.
func (s *Server) handlerFor(prog uint32, proc uint32) HandleFunc {
	return registeredHandlers[registeredHandlerID{prog, proc}]
}

// Serve is a singleton listener paralleling http.Serve
func Serve(l net.Listener, handler Handler) error {
	srv := &Server{Handler: handler}
	return srv.Serve(l)
}
