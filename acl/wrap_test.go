package acl

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/silt-io/silt/view"
	"github.com/silt-io/silt/view/viewtest"
)

func wrapFixture() *viewtest.MemView {
	files := map[string][]byte{}
	for _, p := range []string{
		"/acme/clicks/_manifest.json", "/acme/clicks/segment=1/c1",
		"/acme/views/segment=1/c1", "/acme/logs/segment=1/c1",
		"/beta/one/segment=1/c1", "/gamma/two/segment=1/c1",
	} {
		files[p] = []byte("data of " + p)
	}
	return viewtest.NewMemView(viewtest.Fixture{Files: files}, time.Unix(1e9, 0))
}

func listNames(t *testing.T, v view.View, dir string, limit int) []string {
	t.Helper()
	var out []string
	after := ""
	for {
		page, err := v.ReadDir(context.Background(), dir, after, limit)
		if err != nil {
			t.Fatalf("ReadDir(%s): %v", dir, err)
		}
		for _, fi := range page {
			out = append(out, fi.Name)
		}
		if len(page) < view.Limit(limit) {
			return out
		}
		after = page[len(page)-1].Name
	}
}

func TestWrap(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	e.principal("bob")
	e.grant("alice", Read, "acme/clicks")
	e.grant("alice", Read, "acme/v*")
	e.grant("alice", Append, "beta")
	e.grant("bob", Admin, "*")
	e.grant(Anonymous.Name, Read, "gamma")
	mem := wrapFixture()
	ctx := context.Background()

	alice := Wrap(mem, e.s, Principal{Name: "alice"})
	for _, limit := range []int{0, 1, 2} {
		if got, want := listNames(t, alice, "/", limit), []string{"acme", "beta"}; !slices.Equal(got, want) {
			t.Errorf("limit %d: root = %v, want %v", limit, got, want)
		}
		if got, want := listNames(t, alice, "/acme", limit), []string{"clicks", "views"}; !slices.Equal(got, want) {
			t.Errorf("limit %d: /acme = %v, want %v", limit, got, want)
		}
	}
	// Append on beta lists the tenant but grants no reading of its streams.
	if got := listNames(t, alice, "/beta", 0); len(got) != 0 {
		t.Errorf("/beta = %v, want nothing", got)
	}
	if got, want := listNames(t, Wrap(mem, e.s, Principal{Name: "bob"}), "/", 0), []string{"acme", "beta", "gamma"}; !slices.Equal(got, want) {
		t.Errorf("bob root = %v, want %v", got, want)
	}
	if got, want := listNames(t, Wrap(mem, e.s, Anonymous), "/", 0), []string{"gamma"}; !slices.Equal(got, want) {
		t.Errorf("anonymous root = %v, want %v", got, want)
	}

	f, err := alice.Open(ctx, "/acme/clicks/segment=1/c1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(io.NewSectionReader(f, 0, f.Size()))
	f.Close()
	if string(b) != "data of /acme/clicks/segment=1/c1" {
		t.Errorf("content %q", b)
	}
	if _, err := alice.Stat(ctx, "/acme/views/segment=1"); err != nil {
		t.Errorf("Stat in a glob-granted stream: %v", err)
	}

	denied := []struct {
		name string
		v    view.View
		op   func(view.View, string) error
		path string
	}{
		{"stat other stream", alice, stat, "/acme/logs"},
		{"open other stream", alice, open, "/acme/logs/segment=1/c1"},
		{"list other stream", alice, list, "/acme/logs/segment=1"},
		{"stat missing stream", alice, stat, "/acme/nosuch"},
		{"stat invisible tenant", alice, stat, "/gamma"},
		{"list invisible tenant", alice, list, "/gamma"},
		{"read append-only stream", alice, open, "/beta/one/segment=1/c1"},
		{"anonymous", Wrap(mem, e.s, Anonymous), stat, "/acme"},
	}
	for _, c := range denied {
		t.Run(c.name, func(t *testing.T) {
			err := c.op(c.v, c.path)
			if !errors.Is(err, view.ErrPermission) || !errors.Is(err, ErrDenied) {
				t.Fatalf("err = %v, want ErrPermission and ErrDenied", err)
			}
		})
	}
	if err := stat(Wrap(mem, e.s, Anonymous), "/acme"); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("anonymous denial = %v, want ErrUnauthenticated", err)
	}
	if err := stat(alice, "/acme/clicks/nosuch"); !errors.Is(err, view.ErrNotFound) {
		t.Errorf("missing file in readable stream = %v, want ErrNotFound", err)
	}
}

func stat(v view.View, p string) error { _, err := v.Stat(context.Background(), p); return err }
func open(v view.View, p string) error {
	f, err := v.Open(context.Background(), p)
	if err == nil {
		f.Close()
	}
	return err
}
func list(v view.View, p string) error {
	_, err := v.ReadDir(context.Background(), p, "", 0)
	return err
}

// onlyAuthorizer hides Covers and Visible, so Wrap must fall back to
// Authorize.
type onlyAuthorizer struct{ s *Store }

func (o onlyAuthorizer) Authorize(p Principal, a Action, r Resource) error {
	return o.s.Authorize(p, a, r)
}

func TestWrapWithoutLister(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	e.grant("alice", Read, "acme/clicks")
	v := Wrap(wrapFixture(), onlyAuthorizer{e.s}, Principal{Name: "alice"})
	if got := listNames(t, v, "/", 1); !slices.Equal(got, []string{"acme"}) {
		t.Errorf("root = %v", got)
	}
	if got := listNames(t, v, "/acme", 1); !slices.Equal(got, []string{"clicks"}) {
		t.Errorf("/acme = %v", got)
	}
}

// setView gives the fixture's streams stream sets, as the tier-2 view
// does from core's stream configs.
type setView struct {
	*viewtest.MemView
	sets map[string]string // "tenant/stream" -> set
}

func (g setView) StreamSet(_ context.Context, tenant, stream string) string {
	return g.sets[tenant+"/"+stream]
}

// A "<tenant>/set:<s>" grant reads exactly the streams of that set
// through Wrap, as it does through the native API.
func TestWrapSetGrants(t *testing.T) {
	e := newEnv(t)
	e.principal("carol")
	e.grant("carol", Read, "acme/set:web")
	gv := setView{MemView: wrapFixture(), sets: map[string]string{"acme/clicks": "web", "acme/views": "web", "acme/logs": "ops"}}
	ctx := context.Background()
	carol := Wrap(gv, e.s, Principal{Name: "carol"})
	if got, want := listNames(t, carol, "/acme", 0), []string{"clicks", "views"}; !slices.Equal(got, want) {
		t.Fatalf("/acme = %v, want %v", got, want)
	}
	if _, err := carol.Stat(ctx, "/acme/clicks/segment=1/c1"); err != nil {
		t.Fatalf("stream of the set: %v", err)
	}
	if _, err := carol.Open(ctx, "/acme/logs/segment=1/c1"); !errors.Is(err, view.ErrPermission) {
		t.Fatalf("stream of another set: %v, want ErrPermission", err)
	}
	// Without stream-set knowledge the grant matches nothing.
	if got := listNames(t, Wrap(gv.MemView, e.s, Principal{Name: "carol"}), "/acme", 0); len(got) != 0 {
		t.Fatalf("without StreamSets /acme = %v, want nothing", got)
	}
}
