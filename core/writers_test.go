package core

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestWriterOwnersClaim checks the stream-wide binding of writer ids: the
// first owner keeps an id while it is in use, another owner may take it
// once it has been idle past the retention, and idle ids leave the table.
func TestWriterOwnersClaim(t *testing.T) {
	w := newWriterOwners(nil)
	t0 := time.Unix(1_000_000, 0)
	cases := []struct {
		name      string
		id, owner string
		at        time.Time
		taken     bool
	}{
		{"first use binds", "w", "alice", t0, false},
		{"owner again", "w", "alice", t0.Add(time.Hour), false},
		{"another owner", "w", "mallory", t0.Add(2 * time.Hour), true},
		{"another id", "m", "mallory", t0.Add(2 * time.Hour), false},
		{"just inside retention", "w", "mallory", t0.Add(time.Hour + writerRetention - time.Second), true},
		{"idle past retention", "w", "mallory", t0.Add(time.Hour + writerRetention), false},
		{"now mallory's", "w", "alice", t0.Add(time.Hour + writerRetention + time.Second), true},
	}
	for _, c := range cases {
		err := w.claim("acme", "logs", c.id, c.owner, c.at)
		if taken := errors.Is(err, ErrWriterOwned); taken != c.taken {
			t.Fatalf("%s: claim(%s, %s) = %v, want taken=%v", c.name, c.id, c.owner, err, c.taken)
		}
	}
	// Ids that fall idle are dropped once the table has grown.
	for i := range minSweep {
		if err := w.claim("acme", "logs", fmt.Sprintf("old-%d", i), "p", t0); err != nil {
			t.Fatal(err)
		}
	}
	later := t0.Add(3 * writerRetention)
	for i := range minSweep {
		if err := w.claim("acme", "logs", fmt.Sprintf("new-%d", i), "p", later); err != nil {
			t.Fatal(err)
		}
	}
	w.mu.Lock()
	n := len(w.m)
	w.mu.Unlock()
	if n > minSweep+2 {
		t.Fatalf("table holds %d ids after the idle ones expired, want at most %d", n, minSweep+2)
	}
}
