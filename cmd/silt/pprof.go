package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"go.uber.org/zap"
)

// servePprof serves Go's profiling endpoints on their own listener, so that
// they are never reachable through a head's port by accident. It returns a
// function that stops the listener.
func servePprof(addr string, log *zap.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (runtime.pprof_listen): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Warn("profiling endpoints are on; they are unauthenticated", zap.String("addr", ln.Addr().String()))
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}
