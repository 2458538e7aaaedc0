package acl

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentUse runs authorizers and authenticators against writers
// that keep changing grants and tokens. Under -race it checks the locking;
// in any mode it checks that decisions about grants and tokens nobody
// touches never waver while others change.
func TestConcurrentUse(t *testing.T) {
	e := newEnv(t)
	e.principal("steady")
	e.grant("steady", Read, "acme/stable")
	steadySecret, _ := e.token("steady", 0)
	const writers = 4
	var churners []Principal
	for w := range writers {
		churners = append(churners, Principal{Name: fmt.Sprintf("churn%d", w)})
		e.principal(churners[w].Name)
	}
	steady := Principal{Name: "steady"}
	stable := Resource{Tenant: "acme", Stream: "stable"}

	var (
		stop     atomic.Bool
		failures atomic.Int64
		checks   atomic.Int64
		readers  sync.WaitGroup
	)
	for range 4 {
		readers.Go(func() {
			for !stop.Load() {
				if e.s.Authorize(steady, Read, stable) != nil || e.s.Authorize(steady, Append, stable) == nil {
					failures.Add(1)
				}
				if p, err := e.s.Authenticate(steadySecret); err != nil || p != steady {
					failures.Add(1)
				}
				for _, p := range churners {
					e.s.Authorize(p, Read, acmeClicks)
					e.s.Covers(p, Admin, acme)
					e.s.Visible(p, "acme")
				}
				checks.Add(1)
				// Leave the writers some CPU on small machines.
				runtime.Gosched()
			}
		})
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("churn%d", w)
			for i := range 25 {
				g, err := e.s.AddGrant(name, Read, fmt.Sprintf("acme/s%d*", i))
				if err != nil {
					errs <- err
					return
				}
				secret, tok, err := e.s.IssueToken(name, "", 0)
				if err != nil {
					errs <- err
					return
				}
				if p, err := e.s.Authenticate(secret); err != nil || p.Name != name {
					errs <- fmt.Errorf("fresh token of %s: %v, %v", name, p, err)
					return
				}
				if e.s.Authorize(Principal{Name: name}, Read, Resource{Tenant: "acme", Stream: fmt.Sprintf("s%dx", i)}) != nil {
					errs <- fmt.Errorf("fresh grant %s of %s not effective", g.Resource, name)
					return
				}
				if err := e.s.RevokeToken(name, tok.ID); err != nil {
					errs <- err
					return
				}
				if err := e.s.RemoveGrant(g.ID); err != nil {
					errs <- err
					return
				}
				e.s.ListGrants("")
				e.s.ListTokens(name)
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d wrong decisions about untouched grants or tokens", n)
	}
	if checks.Load() == 0 {
		t.Fatal("readers never ran")
	}
	if gs, _ := e.s.ListGrants(""); len(gs) != 1 {
		t.Fatalf("%d grants left, want 1", len(gs))
	}
}
