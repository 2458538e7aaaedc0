package acl

import (
	"errors"
	"testing"
)

// TestInsecureDev checks the development mode's authorizer: anonymous
// requests may do anything, a named principal gets exactly its grants,
// in decisions and in listing filters alike.
func TestInsecureDev(t *testing.T) {
	e := policyEnv(t)
	dev := InsecureDev(e.s)
	l, ok := dev.(Lister)
	if !ok {
		t.Fatal("InsecureDev does not filter listings (Lister)")
	}
	cases := map[string]struct {
		p      string
		a      Action
		r      Resource
		allow  bool
		listed bool // Covers for a stream, Visible for a tenant
	}{
		"anonymous admin on the server":      {"anonymous", Admin, server, true, true},
		"anonymous reads any stream":         {"anonymous", Read, acmeClicks, true, true},
		"anonymous sees any tenant":          {"anonymous", Read, other, true, true},
		"reader may not grant itself admin":  {"reader-all", Admin, server, false, false},
		"reader may not append":              {"reader-all", Append, acmeClicks, false, false},
		"reader reads":                       {"reader-all", Read, acmeClicks, true, true},
		"stream reader kept to its stream":   {"stream-reader", Read, acmeViews, false, false},
		"stream reader sees its tenant only": {"stream-reader", Read, other, false, false},
		"nobody gets nothing":                {"nobody", Read, acmeClicks, false, false},
		"root keeps admin":                   {"root", Admin, server, true, true},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := Principal{Name: c.p}
			err := dev.Authorize(p, c.a, c.r)
			if (err == nil) != c.allow {
				t.Fatalf("Authorize(%s, %s, %s) = %v, want allowed=%v", c.p, c.a, c.r, err, c.allow)
			}
			if err != nil && !errors.Is(err, ErrDenied) {
				t.Fatalf("denial %v does not wrap ErrDenied", err)
			}
			var listed bool
			if c.r.Stream == "" && c.r.Tenant != "" {
				listed = l.Visible(p, c.r.Tenant)
			} else {
				listed = l.Covers(p, c.a, c.r)
			}
			if listed != c.listed {
				t.Fatalf("listing filter for %s %s %s = %v, want %v", c.p, c.a, c.r, listed, c.listed)
			}
		})
	}
}
