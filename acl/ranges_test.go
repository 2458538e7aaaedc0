package acl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/view"
	"github.com/silt-io/silt/view/viewtest"
)

// listerOnly hides Ranger, so that Wrap reads everything and filters: the
// reference the bounded listings must agree with.
type listerOnly struct{ s *Store }

func (l listerOnly) Authorize(p Principal, a Action, r Resource) error { return l.s.Authorize(p, a, r) }
func (l listerOnly) Covers(p Principal, a Action, r Resource) bool     { return l.s.Covers(p, a, r) }
func (l listerOnly) Visible(p Principal, tenant string) bool           { return l.s.Visible(p, tenant) }

// entryCount counts the entries ReadDir hands to the wrapper.
type entryCount struct {
	view.View
	read atomic.Int64
}

func (c *entryCount) ReadDir(ctx context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	page, err := c.View.ReadDir(ctx, dir, after, limit)
	c.read.Add(int64(len(page)))
	return page, err
}

// manyFixture has a tenant "big" of n streams s00000… with neighbours
// that sort between them ("s00010-x", "s00010.y"), and tenants t0000….
func manyFixture(streams, tenants int) *viewtest.MemView {
	files := map[string][]byte{}
	for i := range streams {
		files[fmt.Sprintf("/big/s%05d/segment=0/c", i)] = nil
	}
	files["/big/s00010-x/segment=0/c"] = nil
	files["/big/s00010.y/segment=0/c"] = nil
	files["/big/zz/segment=0/c"] = nil
	for i := range tenants {
		files[fmt.Sprintf("/t%04d/s/segment=0/c", i)] = nil
	}
	return viewtest.NewMemView(viewtest.Fixture{Files: files}, time.Unix(1e9, 0))
}

// Bounded listings show exactly what reading everything and filtering
// shows, for every kind of grant and page size.
func TestWrapRangesMatchFiltering(t *testing.T) {
	e := newEnv(t)
	grants := map[string][]string{
		"exact":      {"read:big/s00007", "read:big/s00010-x", "read:big/nosuch", "read:big/zz"},
		"glob":       {"read:big/s0001*"},
		"glob-exact": {"read:big/s0001*", "read:big/s00010", "read:big/s00012", "append:big/s00020"},
		"char-class": {"read:big/s0000[13]"},
		"open-glob":  {"read:big/*0"},
		"tenant":     {"read:big"},
		"group":      {"read:big/set:g"},
		"tenants":    {"read:t0003/s", "append:t0007", "read:big/s00001", "read:nosuch"},
		"admin":      {"admin:*"},
		"nothing":    nil,
		"admin-in":   {"admin:big/s0002?"},
	}
	for name, gs := range grants {
		e.principal(name)
		for _, g := range gs {
			a, res, _ := strings.Cut(g, ":")
			e.grant(name, Action(a), res)
		}
	}
	mem := manyFixture(60, 12)
	for name := range grants {
		for _, dir := range []string{"/", "/big", "/t0003"} {
			for _, limit := range []int{1, 3, 1000} {
				p := Principal{Name: name}
				want := listOrDenied(t, Wrap(mem, listerOnly{e.s}, p), dir, limit)
				got := listOrDenied(t, Wrap(mem, e.s, p), dir, limit)
				if !slices.Equal(got, want) {
					t.Errorf("%s lists %s by %d: %q, want %q", name, dir, limit, got, want)
				}
			}
		}
	}
}

func listOrDenied(t *testing.T, v view.View, dir string, limit int) []string {
	t.Helper()
	if _, err := v.ReadDir(context.Background(), dir, "", 1); err != nil {
		return []string{"error: " + err.Error()}
	}
	return listNames(t, v, dir, limit)
}

// A principal granted a few streams of a tenant of 10,000, or two tenants
// of 2,000, lists them reading about as many entries as it is shown;
// filtering the whole listing read 10,000 (2,000) for every page.
func TestWrapRangesReadLittle(t *testing.T) {
	e := newEnv(t)
	e.principal("device")
	e.grant("device", Read, "big/s04711")
	e.grant("device", Read, "big/s09999")
	e.grant("device", Read, "big/s0999*")
	e.grant("device", Read, "t0100/s")
	e.principal("ops")
	e.grant("ops", Read, "t1999")
	e.grant("ops", Append, "t0005/s")
	cv := &entryCount{View: manyFixture(10_000, 2_000)}
	cases := map[string]struct {
		principal, dir string
		want           int
		maxRead        int64
	}{
		"streams of a device": {principal: "device", dir: "/big", want: 11, maxRead: 2 * 11},
		"tenants of a device": {principal: "device", dir: "/", want: 2, maxRead: 2},
		"tenants of ops":      {principal: "ops", dir: "/", want: 2, maxRead: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cv.read.Store(0)
			got := listNames(t, Wrap(cv, e.s, Principal{Name: tc.principal}), tc.dir, 100)
			if len(got) != tc.want {
				t.Fatalf("listed %q, want %d names", got, tc.want)
			}
			if n := cv.read.Load(); n > tc.maxRead {
				t.Fatalf("read %d entries to show %d", n, len(got))
			}
		})
	}
}
