package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/gateways/nfs"
	"github.com/silt-io/silt/tiering"
	"github.com/silt-io/silt/tiering/tierview"
	"github.com/silt-io/silt/view"
	"github.com/silt-io/silt/view/viewtest"
)

// data is what prepare made.
type data struct {
	coreDir string
	ref     string // the directory ganesha and rclone serve
	// chunk is the chunk's path below every server's root; list is the
	// listed directory's.
	chunk, list string
	size        int64
}

const (
	tenant = "bench"
	stream = "big"
	// listTenant holds the listed directory, served from memory by silt.
	listTenant = "list"
	listDir    = "/" + listTenant + "/wide/segment=0"
)

// listName is the name of the listed directory's i-th entry: chunk
// names, as silt gives them.
func listName(i int) string { return fmt.Sprintf("%020d-%020d.txt", i*10, i*10+9) }

// prepare appends the chunk through core, waits for the tierer to seal it
// into the fs backend, and builds the reference directory: a copy of the
// chunk at the same path and the listed directory's empty files.
func prepare(o options) (data, error) {
	size := int64(o.sizeMiB) << 20
	d := data{coreDir: filepath.Join(o.dir, "data"), ref: filepath.Join(o.dir, "ref"), list: listDir, size: size}
	cfg := core.DefaultConfig()
	cfg.Dir = d.coreDir
	store, err := core.Open(cfg, nil)
	if err != nil {
		return d, err
	}
	defer store.Close()
	ctx := context.Background()
	if _, err := store.CreateTenant(ctx, tenant, nil); err != nil {
		return d, err
	}
	if _, err := store.CreateStream(ctx, tenant, stream, core.StreamConfig{}); err != nil {
		return d, err
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
		if _, err := store.Append(ctx, core.AppendRequest{Tenant: tenant, Stream: stream, Events: batch}); err != nil {
			return d, err
		}
	}
	tcfg := tieringConfig(size)
	be, err := tiering.OpenBackend(tcfg, cfg.Dir)
	if err != nil {
		return d, err
	}
	tierer, err := tiering.New(tcfg, store, be, tiering.Options{})
	if err != nil {
		return d, err
	}
	defer tierer.Close()
	fmt.Fprintln(os.Stderr, "sealing into tier 2…")
	tier2 := filepath.Join(cfg.Dir, "tier2")
	var file string
	for deadline := time.Now().Add(5 * time.Minute); file == ""; {
		if time.Now().After(deadline) {
			return d, fmt.Errorf("chunk not sealed in time")
		}
		time.Sleep(200 * time.Millisecond)
		filepath.Walk(tier2, func(p string, info os.FileInfo, err error) error {
			// Skip unfinished uploads (dot-prefixed temp files).
			if err == nil && !info.IsDir() && filepath.Ext(p) == ".txt" && !strings.HasPrefix(info.Name(), ".") && info.Size() >= size {
				file = p
			}
			return nil
		})
	}
	rel, _ := filepath.Rel(tier2, file)
	d.chunk = "/" + filepath.ToSlash(rel)
	// The view must list it too (the catalog entry follows the upload).
	tv := tierview.New(store, be)
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := tv.Stat(ctx, d.chunk); err == nil {
			break
		} else if time.Now().After(deadline) {
			return d, fmt.Errorf("sealed chunk %s not in the view: %w", d.chunk, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	fmt.Fprintln(os.Stderr, "building the reference directory…")
	dst := filepath.Join(d.ref, filepath.FromSlash(d.chunk))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return d, err
	}
	if err := copyFile(file, dst); err != nil {
		return d, err
	}
	ld := filepath.Join(d.ref, filepath.FromSlash(listDir))
	if err := os.MkdirAll(ld, 0o755); err != nil {
		return d, err
	}
	for i := range o.files {
		f, err := os.Create(filepath.Join(ld, listName(i)))
		if err != nil {
			return d, err
		}
		f.Close()
	}
	// World-readable, so that no server's permission model gets in the way.
	return d, runCmd("chmod", "-R", "a+rX", d.ref)
}

func tieringConfig(size int64) tiering.Config {
	tcfg := tiering.DefaultConfig()
	// Seal by size only, so the whole run becomes one chunk.
	tcfg.MaxChunkBytes = size
	tcfg.MaxLag = time.Hour
	tcfg.Interval = 100 * time.Millisecond
	return tcfg
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// serveSilt is the silt child: the tier-2 view of the prepared store,
// plus the listed directory from memory, through the NFS head as root.
func serveSilt(o options) error {
	cfg := core.DefaultConfig()
	cfg.Dir = filepath.Join(o.dir, "data")
	store, err := core.Open(cfg, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	be, err := tiering.OpenBackend(tieringConfig(int64(o.sizeMiB)<<20), cfg.Dir)
	if err != nil {
		return err
	}
	acls, err := acl.Open(store.Catalog())
	if err != nil {
		return err
	}
	if _, err := acls.EnsureRoot("root", ""); err != nil {
		return err
	}
	files := make(map[string][]byte, o.files)
	for i := range o.files {
		files[listDir+"/"+listName(i)] = nil
	}
	v := &muxView{View: tierview.New(store, be), list: viewtest.NewMemView(viewtest.Fixture{Files: files}, time.Now())}
	ncfg := nfs.DefaultConfig()
	ncfg.Listen = o.listen
	// The default export acts as anonymous; the benchmark reads as root.
	ncfg.Exports = []string{"path=/;principal=root;allow=127.0.0.1/32|::1/128"}
	srv, err := nfs.New(ncfg, v, acls, []byte("nfsbench handle key, 32 bytes.."), zap.NewNop())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	if o.profile != "" {
		f, err := os.Create(o.profile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	fmt.Println("ready")
	// The parent stops the child by closing its stdin.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return srv.Serve(ctx, ln)
}

// muxView serves /list from memory and everything else from the tier-2
// view; the root lists both.
type muxView struct {
	view.View
	list view.View
}

func (m *muxView) pick(p string) view.View {
	if p == "/"+listTenant || strings.HasPrefix(p, "/"+listTenant+"/") {
		return m.list
	}
	return m.View
}

func (m *muxView) Stat(ctx context.Context, p string) (view.FileInfo, error) {
	return m.pick(p).Stat(ctx, p)
}

func (m *muxView) Open(ctx context.Context, p string) (view.File, error) {
	return m.pick(p).Open(ctx, p)
}

func (m *muxView) ReadDir(ctx context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	if dir != "/" {
		return m.pick(dir).ReadDir(ctx, dir, after, limit)
	}
	a, err := m.View.ReadDir(ctx, dir, after, limit)
	if err != nil {
		return nil, err
	}
	b, err := m.list.ReadDir(ctx, dir, after, limit)
	if err != nil {
		return nil, err
	}
	// Merge two sorted pages; the first limit of the union is complete.
	var out []view.FileInfo
	for len(out) < view.Limit(limit) && (len(a) > 0 || len(b) > 0) {
		if len(b) == 0 || (len(a) > 0 && a[0].Name < b[0].Name) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out, nil
}
