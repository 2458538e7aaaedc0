package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/silt-io/silt/client"
	"github.com/silt-io/silt/groups"
)

const commitStream = "commits"

// commitCase measures one reader committing one position, a pebble sync
// write of a position record in pebbleDir, and GET /healthz, in blocks
// that take turns, so that all three see the disk and the machine alike.
func commitCase(ctx context.Context, srv *server, pebbleDir string, n int) error {
	cl := srv.CL
	if _, err := cl.CreateTenant(ctx, tenant, nil); err != nil && !client.IsConflict(err) {
		return err
	}
	if _, err := cl.CreateStream(ctx, tenant, client.StreamSpec{Name: commitStream, Segments: 1}); err != nil {
		return err
	}
	const events = 100
	evs := make([][]byte, events)
	for i := range evs {
		evs[i] = []byte("event")
	}
	res, err := cl.Append(ctx, tenant, commitStream, evs, client.AppendOptions{})
	if err != nil {
		return err
	}
	seg := res.Segment
	if _, err := cl.CreateGroup(ctx, tenant, client.GroupSpec{Name: "committer", Streams: []string{commitStream}}); err != nil {
		return err
	}
	a, err := cl.JoinGroup(ctx, tenant, "committer", "c1")
	if err != nil {
		return err
	}

	// The catalog's own write: pebble opened as core/catalog opens it, on
	// the same disk, a Set with Sync of a value as large as the position
	// record a commit stores.
	db, err := pebble.Open(pebbleDir, &pebble.Options{FormatMajorVersion: pebble.FormatNewest, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer db.Close()
	key := []byte("groups/p/" + tenant + "/committer/" + commitStream + "/" + seg)
	hc := &http.Client{Timeout: 10 * time.Second}
	healthz := "http://" + srv.API + "/healthz"

	var commit, write, floor []time.Duration
	var recordBytes int
	const block = 50
	for i := 0; i < n; {
		k := min(block, n-i)
		for j := range k {
			off := uint64((i+j)%events + 1)
			t0 := time.Now()
			err := cl.CommitGroup(ctx, tenant, "committer", "c1", a.Generation, []client.Position{{Stream: commitStream, Segment: seg, Offset: off}})
			if err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			commit = append(commit, time.Since(t0))
		}
		for j := range k {
			val, _ := json.Marshal(groups.Position{Stream: commitStream, Segment: seg, Offset: uint64((i+j)%events + 1), Committed: time.Now()})
			recordBytes = len(val)
			t0 := time.Now()
			if err := db.Set(key, val, pebble.Sync); err != nil {
				return fmt.Errorf("pebble: %w", err)
			}
			write = append(write, time.Since(t0))
		}
		for range k {
			t0 := time.Now()
			resp, err := hc.Get(healthz)
			if err != nil {
				return fmt.Errorf("healthz: %w", err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			floor = append(floor, time.Since(t0))
		}
		i += k
	}
	fmt.Printf("\n%d of each, in blocks of %d taking turns; the position record is %d bytes\n\n", n, block, recordBytes)
	fmt.Println("| measure | p50 | p99 | p99 ÷ pebble p99 |")
	fmt.Println("|---|---:|---:|---:|")
	wp := pct(write, 0.99)
	for _, r := range []struct {
		name string
		ds   []time.Duration
	}{
		{"CommitGroup, one position (HTTP)", commit},
		{"pebble Set + Sync, same size", write},
		{"floor: GET /healthz (HTTP round trip)", floor},
	} {
		fmt.Printf("| %s | %v | %v | %.2f |\n", r.name, pct(r.ds, 0.5).Round(time.Microsecond), pct(r.ds, 0.99).Round(time.Microsecond), float64(pct(r.ds, 0.99))/float64(wp))
	}
	fmt.Printf("\ncommit: p99 ÷ pebble p99 = %.2f (target ≤ 2); commit p99 minus the floor's p99 ÷ pebble p99 = %.2f\n",
		float64(pct(commit, 0.99))/float64(wp), float64(pct(commit, 0.99)-pct(floor, 0.99))/float64(wp))
	return nil
}

// quietLogger keeps pebble's start-up notes out of the tables; errors
// come back from the calls.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
