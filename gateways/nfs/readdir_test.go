package nfs

import (
	"context"
	"fmt"
	"io"
	"net"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"

	"github.com/silt-io/silt/view"
	"github.com/silt-io/silt/view/viewtest"
)

const (
	hugeDir   = "/acme/huge/segment=0"
	hugeCount = 100_000
)

func hugeName(i int) string { return fmt.Sprintf("%020d-%020d.txt", i*10, i*10+9) }

// countingView is an instrumentation wrapper: it counts ReadDir calls and
// the entries they return, so that tests can see what a reply page cost.
type countingView struct {
	view.View
	calls, entries atomic.Int64
}

func (c *countingView) ReadDir(ctx context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	fis, err := c.View.ReadDir(ctx, dir, after, limit)
	c.calls.Add(1)
	c.entries.Add(int64(len(fis)))
	return fis, err
}

// serveView serves v (through acl.Wrap for root) on 127.0.0.1:0.
func serveView(t *testing.T, cfg Config, v view.View) (string, func()) {
	t.Helper()
	e := newEnv(t)
	srv, err := New(cfg, v, e.store, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, srv)
}

// startServer serves srv on 127.0.0.1:0 and returns its address and a
// function that stops it (also run at cleanup) and waits for Serve.
func startServer(t *testing.T, srv *Server) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

var (
	hugeOnce sync.Once
	hugeMem  *viewtest.MemView
)

// hugeView is a MemView with hugeCount entries in hugeDir, built once.
func hugeView() *viewtest.MemView {
	hugeOnce.Do(func() {
		files := make(map[string][]byte, hugeCount)
		for i := range hugeCount {
			files[hugeDir+"/"+hugeName(i)] = nil
		}
		hugeMem = viewtest.NewMemView(viewtest.Fixture{Files: files}, mtime)
	})
	return hugeMem
}

// lister sends READDIR(PLUS) calls itself through the go-nfs-client RPC
// client, to see every entry of every reply: the client's own ReadDirPlus
// folds entries into a map by name, which would hide duplicates.
type lister struct {
	t    *testing.T
	tgt  *nfsc.Target
	auth rpc.Auth
	fh   []byte
	plus bool
	max  uint32
}

type dirPage struct {
	names   []string
	cookies []uint64
	eof     bool
	status  uint32
}

func newLister(t *testing.T, addr, dir string, plus bool, maxcount uint32) *lister {
	t.Helper()
	tgt := mustMount(t, addr, "/")
	_, fh, err := tgt.Lookup(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &lister{t: t, tgt: tgt, auth: rpc.NewAuthUnix("silt-test", 0, 0).Auth(), fh: fh, plus: plus, max: maxcount}
}

func (l *lister) page(cookie, verf uint64) dirPage {
	l.t.Helper()
	type readDirArgs struct {
		rpc.Header
		FH         []byte
		Cookie     uint64
		CookieVerf uint64
		Count      uint32
	}
	type readDirPlusArgs struct {
		rpc.Header
		FH         []byte
		Cookie     uint64
		CookieVerf uint64
		DirCount   uint32
		MaxCount   uint32
	}
	hdr := rpc.Header{Rpcvers: 2, Prog: nfsc.Nfs3Prog, Vers: nfsc.Nfs3Vers, Proc: 16, Cred: l.auth, Verf: rpc.AuthNull}
	var call any = &readDirArgs{hdr, l.fh, cookie, verf, l.max}
	if l.plus {
		hdr.Proc = nfsc.NFSProc3ReadDirPlus
		call = &readDirPlusArgs{hdr, l.fh, cookie, verf, l.max / 8, l.max}
	}
	res, err := l.tgt.Call(call)
	if err != nil {
		l.t.Fatal(err)
	}
	var p dirPage
	if p.status, err = xdr.ReadUint32(res); err != nil {
		l.t.Fatal(err)
	}
	if p.status != 0 {
		return p
	}
	var head struct {
		Attr nfsc.PostOpAttr
		Verf uint64
	}
	if err := xdr.Read(res, &head); err != nil {
		l.t.Fatal(err)
	}
	for {
		more, err := xdr.ReadUint32(res)
		if err != nil {
			l.t.Fatal(err)
		}
		if more == 0 {
			break
		}
		var name string
		if l.plus {
			var e nfsc.EntryPlus
			err = xdr.Read(res, &e)
			name, cookie = e.FileName, e.Cookie
		} else {
			var e struct {
				FileID uint64
				Name   string
				Cookie uint64
			}
			err = xdr.Read(res, &e)
			name, cookie = e.Name, e.Cookie
		}
		if err != nil {
			l.t.Fatal(err)
		}
		p.names = append(p.names, name)
		p.cookies = append(p.cookies, cookie)
	}
	eof, err := xdr.ReadUint32(res)
	if err != nil {
		l.t.Fatal(err)
	}
	if n, _ := io.Copy(io.Discard, res); n != 0 {
		l.t.Fatalf("%d bytes after the eof flag", n)
	}
	p.eof = eof == 1
	return p
}

// listAll lists the directory from cookie 0 and returns the names other
// than "." and "..", in reply order, and the number of replies.
func (l *lister) listAll(each func(dirPage)) ([]string, int) {
	l.t.Helper()
	var names []string
	cookie, pages := uint64(0), 0
	for {
		p := l.page(cookie, 0)
		if p.status != 0 {
			l.t.Fatalf("page %d (cookie %#x): NFS status %d", pages, cookie, p.status)
		}
		pages++
		if len(p.names) == 0 && !p.eof {
			l.t.Fatalf("page %d: empty but not eof", pages)
		}
		for _, n := range p.names {
			if n != "." && n != ".." {
				names = append(names, n)
			}
		}
		if each != nil {
			each(p)
		}
		if p.eof {
			return names, pages
		}
		cookie = p.cookies[len(p.cookies)-1]
	}
}

// wantExactlyOnce checks that got holds every name of want once.
func wantExactlyOnce(t *testing.T, got []string, want func(i int) string, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("listed %d entries, want %d", len(got), n)
	}
	sorted := slices.Clone(got)
	sort.Strings(sorted)
	for i, name := range sorted {
		if name != want(i) {
			t.Fatalf("sorted entry %d = %q, want %q (duplicates or gaps)", i, name, want(i))
		}
	}
}

func TestReadDirHugeOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000-entry listing")
	}
	addr, _ := serveView(t, rootConfig(), hugeView())
	for _, plus := range []bool{true, false} {
		t.Run(fmt.Sprintf("plus=%v", plus), func(t *testing.T) {
			l := newLister(t, addr, hugeDir, plus, 32<<10)
			names, pages := l.listAll(nil)
			wantExactlyOnce(t, names, hugeName, hugeCount)
			if !sort.StringsAreSorted(names) {
				t.Fatal("entries are not in name order")
			}
			t.Logf("%d replies", pages)
		})
	}
	// And through the client's own listing, with its small replies
	// (maxcount 4096).
	ents, err := mustMount(t, addr, "/").ReadDirPlus(hugeDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != hugeCount {
		t.Fatalf("client ReadDirPlus: %d entries, want %d", len(ents), hugeCount)
	}
}

// TestReadDirPageCost checks that a reply costs the same at the end of a
// directory as at its start: one view call and a bounded number of
// entries read per reply. (Re-listing from the start, as upstream go-nfs
// did, reads about hugeCount/2 entries per reply on average.)
func TestReadDirPageCost(t *testing.T) {
	n := hugeCount
	if testing.Short() {
		n = 20_000
	}
	files := make(map[string][]byte, n)
	for i := range n {
		files[hugeDir+"/"+hugeName(i)] = nil
	}
	cv := &countingView{View: viewtest.NewMemView(viewtest.Fixture{Files: files}, mtime)}
	addr, _ := serveView(t, rootConfig(), cv)
	l := newLister(t, addr, hugeDir, true, 8<<10)
	var perPage []int64
	lastEntries, lastCalls := cv.entries.Load(), cv.calls.Load()
	names, pages := l.listAll(func(p dirPage) {
		e, c := cv.entries.Load(), cv.calls.Load()
		if c-lastCalls != 1 {
			t.Fatalf("reply %d took %d view ReadDir calls, want 1", len(perPage), c-lastCalls)
		}
		perPage = append(perPage, e-lastEntries)
		lastEntries, lastCalls = e, c
	})
	wantExactlyOnce(t, names, hugeName, n)
	// An 8 KiB READDIRPLUS reply holds about 30 of these entries; the
	// server reads at most the number that could fit with empty names.
	const bound = 80
	for i, got := range perPage {
		if got > bound {
			t.Fatalf("reply %d of %d read %d entries from the view, want ≤ %d", i, pages, got, bound)
		}
	}
	first, last := avg(perPage[:pages/10]), avg(perPage[pages-pages/10-1:pages-1])
	if last > first*1.1 {
		t.Fatalf("entries read per reply grew from %.1f (first tenth) to %.1f (last tenth)", first, last)
	}
	if total := cv.entries.Load(); total > int64(3*n) {
		t.Fatalf("listing %d entries read %d from the view", n, total)
	}
}

func avg(xs []int64) float64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(len(xs))
}

// TestReadDirCookieAfterRestart: a listing continues across a server
// restart (the cookie cache is gone) without duplicates or gaps, and
// afterwards at a page's cost again.
func TestReadDirCookieAfterRestart(t *testing.T) {
	const n = 5000
	files := make(map[string][]byte, n)
	for i := range n {
		files[hugeDir+"/"+hugeName(i)] = nil
	}
	cv := &countingView{View: viewtest.NewMemView(viewtest.Fixture{Files: files}, mtime)}
	addr, stop := serveView(t, rootConfig(), cv)
	l := newLister(t, addr, hugeDir, true, 8<<10)
	var names []string
	cookie := uint64(0)
	for len(names) < n/2 {
		p := l.page(cookie, 0)
		for _, name := range p.names {
			if name != "." && name != ".." {
				names = append(names, name)
			}
		}
		cookie = p.cookies[len(p.cookies)-1]
	}
	stop()

	addr, _ = serveView(t, rootConfig(), cv)
	l = newLister(t, addr, hugeDir, true, 8<<10)
	for page := 0; ; page++ {
		before := cv.entries.Load()
		p := l.page(cookie, 0)
		if p.status != 0 {
			t.Fatalf("after restart, page %d: NFS status %d", page, p.status)
		}
		if read := cv.entries.Load() - before; page > 0 && read > 80 {
			t.Fatalf("after restart, page %d read %d entries: the cookie cache did not take over", page, read)
		}
		names = append(names, p.names...)
		if p.eof {
			break
		}
		cookie = p.cookies[len(p.cookies)-1]
	}
	wantExactlyOnce(t, names, hugeName, n)
}

// growingView is a directory that gains entries while it is listed.
type growingView struct {
	mu    sync.Mutex
	names []string // sorted
}

func (g *growingView) add(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i, found := slices.BinarySearch(g.names, name)
	if !found {
		g.names = slices.Insert(g.names, i, name)
	}
}

func (g *growingView) Stat(_ context.Context, p string) (view.FileInfo, error) {
	switch {
	case p == "/" || strings.Count(p, "/") < strings.Count(hugeDir, "/") || p == hugeDir:
		return view.FileInfo{Name: path.Base(p), IsDir: true, ModTime: mtime, ID: view.PathID(p)}, nil
	case path.Dir(p) == hugeDir:
		g.mu.Lock()
		_, found := slices.BinarySearch(g.names, path.Base(p))
		g.mu.Unlock()
		if found {
			return view.FileInfo{Name: path.Base(p), ModTime: mtime, ID: view.PathID(p)}, nil
		}
	}
	return view.FileInfo{}, view.ErrNotFound
}

func (g *growingView) ReadDir(_ context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	if dir != hugeDir {
		return nil, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	i, found := slices.BinarySearch(g.names, after)
	if found {
		i++
	}
	var out []view.FileInfo
	for ; i < len(g.names) && len(out) < view.Limit(limit); i++ {
		out = append(out, view.FileInfo{Name: g.names[i], ModTime: mtime, ID: view.PathID(view.Join(dir, g.names[i]))})
	}
	return out, nil
}

func (g *growingView) Open(context.Context, string) (view.File, error) { return nil, view.ErrNotFound }

// TestReadDirGrowing lists a directory that gains entries between every
// two replies, before and after the listing's position: the listing must
// end (no NFS3ERR_BAD_COOKIE restarts), show every original entry once,
// and never show an entry twice.
func TestReadDirGrowing(t *testing.T) {
	g := &growingView{}
	const n = 3000
	for i := range n {
		g.add(hugeName(2 * i))
	}
	addr, _ := serveView(t, rootConfig(), g)
	l := newLister(t, addr, hugeDir, true, 8<<10)
	added := n
	var behind, ahead []string
	names, pages := l.listAll(func(p dirPage) {
		// One entry just before the page's last (the listing is past
		// it) and one after every other (the listing must reach it).
		if p.eof {
			return
		}
		var j int
		fmt.Sscanf(p.names[len(p.names)-1], "%d", &j)
		if i := j/10 - 1; i > 0 && i%2 == 1 {
			behind = append(behind, hugeName(i))
			g.add(hugeName(i))
		}
		ahead = append(ahead, hugeName(2*n+added))
		g.add(hugeName(2*n + added))
		added++
	})
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			t.Fatalf("%s listed twice", name)
		}
		seen[name] = true
	}
	for i := range n {
		if !seen[hugeName(2*i)] {
			t.Fatalf("original entry %s missing", hugeName(2*i))
		}
	}
	for _, name := range ahead {
		if !seen[name] {
			t.Fatalf("%s, added ahead of the listing, missing", name)
		}
	}
	for _, name := range behind {
		if seen[name] {
			t.Fatalf("%s, added behind the listing, listed", name)
		}
	}
	if len(behind) == 0 || len(ahead) == 0 {
		t.Fatal("the directory did not grow on both sides")
	}
	if pages > 2*n {
		t.Fatalf("%d replies for %d entries", pages, len(names))
	}
	// Cookies are independent of the verifier: a stale or made-up one
	// still resumes.
	p := l.page(nameCookie(hugeName(10)), 0xdeadbeef)
	if p.status != 0 || len(p.names) == 0 || p.names[0] <= hugeName(10) {
		t.Fatalf("resume with another verifier: status %d, names %v", p.status, p.names[:min(3, len(p.names))])
	}
	// A cookie that names nothing in the directory is BAD_COOKIE.
	if p := l.page(nameCookie("no such entry"), 0); p.status != 10003 {
		t.Fatalf("unknown cookie: NFS status %d, want NFS3ERR_BAD_COOKIE", p.status)
	}
}

// TestReadDirSmallCount: a count too small for one entry is TOO_SMALL;
// "." and ".." lead the first reply with cookies 1 and 2.
func TestReadDirSmallCount(t *testing.T) {
	addr, _ := serveView(t, rootConfig(), hugeView())
	l := newLister(t, addr, hugeDir, true, 100)
	if p := l.page(0, 0); p.status != 10005 {
		t.Fatalf("maxcount 100: NFS status %d, want NFS3ERR_TOOSMALL", p.status)
	}
	l.max = 1024
	p := l.page(0, 0)
	if p.status != 0 || len(p.names) < 3 || p.names[0] != "." || p.names[1] != ".." || p.cookies[0] != 1 || p.cookies[1] != 2 || p.names[2] != hugeName(0) {
		t.Fatalf("first page: %+v", p)
	}
	if p := l.page(1, 0); p.status != 0 || p.names[0] != ".." || p.names[1] != hugeName(0) {
		t.Fatalf("after '.': %+v", p)
	}
}
