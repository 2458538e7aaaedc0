package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/signal"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/gateways/s3"
	"github.com/silt-io/silt/tiering"
	"github.com/silt-io/silt/tiering/tierview"
)

// serveChild serves the S3 head over the tier-2 view of the store in
// dataDir, as silt serve would, until interrupted.
func serveChild(dataDir, addr string) error {
	cfg := core.DefaultConfig()
	cfg.Dir = dataDir
	store, err := core.Open(cfg, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	be, err := tiering.OpenBackend(tiering.DefaultConfig(), dataDir)
	if err != nil {
		return err
	}
	acls, err := acl.Open(store.Catalog())
	if err != nil {
		return err
	}
	srv, err := s3.New(s3.DefaultConfig(), tierview.New(store, be), acls, acls, nil)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.Handler()}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	if err := hs.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}
