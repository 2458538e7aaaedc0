// Package benchdata prepares what the head benchmarks read: one large chunk
// sealed into the fs backend the real way (appended through core, sealed by
// the tierer), a loopback HTTP server for a handler, and free loopback
// addresses for the servers the benchmarks start as child processes.
package benchdata

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/tiering"
)

// SealChunk appends size bytes of lines to bench/big and waits until the
// tierer has sealed them into one tier-2 chunk; it returns the chunk's
// file, its segment and the tier-2 backend holding it.
func SealChunk(ctx context.Context, store *core.Store, dataDir string, size int64) (string, string, tiering.Backend, func(), error) {
	st, err := store.CreateStream(ctx, "bench", "big", core.StreamConfig{Segments: 1})
	if err != nil {
		return "", "", nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "appending %d MiB…\n", size>>20)
	ev := make([]byte, 1023)
	for i := range ev {
		ev[i] = 'a' + byte(i%26)
	}
	batch := make([][]byte, 4096) // 4 MiB of encoded lines per append
	for i := range batch {
		batch[i] = ev
	}
	for n := int64(0); n < size; n += int64(len(batch)) * 1024 {
		if _, err := store.Append(ctx, core.AppendRequest{Tenant: "bench", Stream: "big", Events: batch}); err != nil {
			return "", "", nil, nil, err
		}
	}
	tcfg := tiering.DefaultConfig()
	// Seal by size only, so the whole run becomes one chunk.
	tcfg.MaxChunkBytes = size
	tcfg.MaxLag = time.Hour
	tcfg.Interval = 100 * time.Millisecond
	be, err := tiering.OpenBackend(tcfg, dataDir)
	if err != nil {
		return "", "", nil, nil, err
	}
	tierer, err := tiering.New(tcfg, store, be, tiering.Options{})
	if err != nil {
		return "", "", nil, nil, err
	}
	fmt.Fprintln(os.Stderr, "sealing into tier 2…")
	var chunk string
	for deadline := time.Now().Add(5 * time.Minute); chunk == ""; {
		if time.Now().After(deadline) {
			tierer.Close()
			return "", "", nil, nil, fmt.Errorf("chunk not sealed in time")
		}
		time.Sleep(200 * time.Millisecond)
		filepath.Walk(filepath.Join(dataDir, "tier2"), func(p string, info os.FileInfo, err error) error {
			// Skip unfinished uploads (dot-prefixed temp files).
			if err == nil && !info.IsDir() && filepath.Ext(p) == ".txt" && !strings.HasPrefix(info.Name(), ".") && info.Size() >= size {
				chunk = p
			}
			return nil
		})
	}
	return chunk, st.Segments[0].ID, be, func() { tierer.Close() }, nil
}

// listing seeds a one-segment stream with n chunk records and times
// LISTSTATUS_BATCH's first page against a page near the end.
// Serve serves h on a free loopback port and returns its base URL and a
// function that stops it.
func Serve(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

// FreeAddr returns a loopback address whose port was free a moment ago,
// for a child process to listen on. Another process may take the port
// before the child does; the benchmarks then fail to start it and say so.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}
