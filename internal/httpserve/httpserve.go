// Package httpserve is the one serve loop of silt's HTTP heads (native
// API, S3, WebHDFS): serve on a listener, optionally with TLS, until the
// context ends, then shut down gracefully within a bound and close what is
// left.
package httpserve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"
)

// Serve runs srv on ln until ctx is cancelled or serving fails. With
// tlsCfg set, connections are TLS. On cancellation, beforeShutdown (may be
// nil) runs first — e.g. to end long-polls that would hold connections
// open — then in-flight requests get up to grace to finish before the
// remaining connections are closed. A clean shutdown returns nil.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, tlsCfg *tls.Config, grace time.Duration, beforeShutdown func()) error {
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if beforeShutdown != nil {
			beforeShutdown()
		}
		srv.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	if beforeShutdown != nil {
		beforeShutdown()
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close()
		err = fmt.Errorf("shutdown: %w", err)
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = fmt.Errorf("serve: %w", serr)
	}
	return err
}

// ServeHandler is Serve with the settings the protocol heads share: a
// 30-second limit on reading request headers, the server's own errors
// logged through errorLog, and 5 seconds of grace at shutdown.
func ServeHandler(ctx context.Context, h http.Handler, errorLog *log.Logger, ln net.Listener, tlsCfg *tls.Config) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: errorLog}
	return Serve(ctx, srv, ln, tlsCfg, 5*time.Second, nil)
}
