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

	"github.com/silt-io/silt/internal/connlimit"
)

// Serve runs srv on ln until ctx is cancelled or serving fails. With
// tlsCfg set, connections are TLS. On cancellation, beforeShutdown (may be
// nil) runs first — e.g. to end long-polls that would hold connections
// open — then in-flight requests get up to grace to finish before the
// remaining connections are closed. A clean shutdown returns nil.
//
// When ln is a connlimit.Listener (or wraps one) and srv has no
// ConnState hook, connections report whether they serve a request, so
// that at the head's cap only an idle one is closed for a newcomer.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, tlsCfg *tls.Config, grace time.Duration, beforeShutdown func()) error {
	if srv.ConnState == nil {
		srv.ConnState = connlimit.HTTPConnState
	}
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
	return Serve(ctx, headServer(h, errorLog), ln, tlsCfg, 5*time.Second, nil)
}

// idleTimeout closes a protocol head's keep-alive connection after this
// long without a request, as the native API's api.idle_timeout does by
// default. Without it net/http keeps an idle connection for ever, and
// clients that vanish without closing theirs would fill the head.
const idleTimeout = 2 * time.Minute

func headServer(h http.Handler, errorLog *log.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: idleTimeout, ErrorLog: errorLog}
}
