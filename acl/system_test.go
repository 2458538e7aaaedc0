package acl

import (
	"errors"
	"testing"

	"github.com/silt-io/silt/core/names"
)

// TestSystemStreamsFollowTenantAdmin checks the rule of the system
// tenant's streams: a tenant admin reads its own tenant's streams there
// and no other's, a reader of the tenant reads none, and the rule goes
// with the admin grant.
func TestSystemStreamsFollowTenantAdmin(t *testing.T) {
	s := newEnv(t).s
	for _, p := range []string{"acmeadmin", "reader", "root"} {
		if _, err := s.CreatePrincipal(p); err != nil {
			t.Fatal(err)
		}
	}
	g, err := s.AddGrant("acmeadmin", Admin, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddGrant("reader", Read, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddGrant("root", Admin, "*"); err != nil {
		t.Fatal(err)
	}
	sys := func(stream string) Resource { return Resource{Tenant: names.SystemTenant, Stream: stream} }
	cases := []struct {
		who   string
		a     Action
		r     Resource
		allow bool
	}{
		{"acmeadmin", Read, sys("acme.requests"), true},
		{"acmeadmin", Read, sys("acme.denials"), true},
		{"acmeadmin", Read, sys("other.requests"), false},
		{"acmeadmin", Read, sys("acme-x.requests"), false},
		{"acmeadmin", Read, sys("server_wide.requests"), false},
		{"acmeadmin", Append, sys("acme.requests"), false},
		{"acmeadmin", Admin, sys("acme.requests"), false},
		{"acmeadmin", Read, Resource{Tenant: names.SystemTenant}, true}, // may list it
		{"reader", Read, sys("acme.requests"), false},
		{"reader", Read, Resource{Tenant: names.SystemTenant}, false},
		{"root", Read, sys("other.requests"), true},
		{"root", Read, sys("server_wide.metrics"), true},
	}
	for _, c := range cases {
		err := s.Authorize(Principal{Name: c.who}, c.a, c.r)
		if c.allow && err != nil {
			t.Errorf("%s %s %s: %v, want allowed", c.who, c.a, c.r, err)
		}
		if !c.allow && !errors.Is(err, ErrDenied) {
			t.Errorf("%s %s %s: %v, want denied", c.who, c.a, c.r, err)
		}
	}
	tenants, all := s.VisibleTenants(Principal{Name: "acmeadmin"})
	if all || len(tenants) != 2 || tenants[0] != "acme" || tenants[1] != names.SystemTenant {
		t.Errorf("VisibleTenants = %v, %v; want [acme silt-system]", tenants, all)
	}
	ranges, all := s.StreamRanges(Principal{Name: "acmeadmin"}, Read, names.SystemTenant)
	if all || len(ranges) != 1 || ranges[0] != (NameRange{From: "acme.", To: "acme/"}) {
		t.Errorf("StreamRanges = %v, %v; want [acme. acme/)", ranges, all)
	}
	if err := s.RemoveGrant(g.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Authorize(Principal{Name: "acmeadmin"}, Read, sys("acme.requests")); !errors.Is(err, ErrDenied) {
		t.Errorf("after the admin grant went: %v, want denied", err)
	}
}
