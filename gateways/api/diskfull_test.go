package api

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/vfs"
)

// TestDiskFullAtNewSegmentFile fills the disk at the moment an append
// needs a new segment file: that append gets a clear 503 without server
// paths (the log keeps them), every acknowledged event is still there
// after a restart, and appends go on once space returns.
func TestDiskFullAtNewSegmentFile(t *testing.T) {
	fs := vfs.NewNoSpaceOnCreateFS(vfs.OS{})
	obs, logs := observer.New(zapcore.InfoLevel)
	e := newEnv(t, envOptions{
		fs:   fs,
		log:  zap.New(obs),
		core: func(c *core.Config) { c.SegmentFileBytes = 4096 },
	})
	e.mkStream("acme", "logs", "lines", 1)

	var acked []string
	send := func(seq int) reply {
		ev := fmt.Sprintf("%04d:%s", seq, strings.Repeat("x", 400))
		rep := e.do(req{method: "POST", path: eventsPath("acme", "logs"), token: e.root, body: []byte(ev),
			header: map[string]string{headerWriterID: "w1", headerSeq: strconv.Itoa(seq)}})
		if rep.status == http.StatusOK {
			var a appendJSON
			rep.json(t, &a)
			if a.Duplicate {
				t.Fatalf("seq %d acknowledged as a duplicate", seq)
			}
			acked = append(acked, ev)
		}
		return rep
	}
	// The first file holds about ten of these; the append that does not
	// fit needs the second file, which the full disk cannot give.
	seq := 1
	var refused reply
	for ; seq <= 100; seq++ {
		if refused = send(seq); refused.status != http.StatusOK {
			break
		}
		if seq == 1 {
			// A segment's first file is made by its first append.
			fs.SetFull(true)
		}
	}
	if len(acked) == 0 || refused.status != http.StatusServiceUnavailable {
		t.Fatalf("after %d acknowledged appends: %d %s, want 503 once a new file is needed", len(acked), refused.status, refused.body)
	}
	if refused.errCode(t) != "unavailable" || refused.header.Get("Retry-After") == "" {
		t.Fatalf("full disk: %s, Retry-After %q", refused.body, refused.header.Get("Retry-After"))
	}
	msg := string(refused.body)
	if !strings.Contains(msg, "no space left on device") {
		t.Fatalf("full disk message does not say why: %s", msg)
	}
	if strings.Contains(msg, e.coreCfg.Dir) || strings.Contains(msg, "/logs/") || strings.Contains(msg, ".log") {
		t.Fatalf("full disk message shows server paths: %s", msg)
	}
	// The log has the whole error, path included, under the request id.
	var rid string
	var body errorBody
	refused.json(t, &body)
	rid = body.Error.RequestID
	found := false
	for _, ent := range logs.All() {
		f := ent.ContextMap()
		if f["request_id"] == rid && strings.Contains(fmt.Sprint(f["error"]), e.coreCfg.Dir) && ent.Level >= zapcore.WarnLevel {
			found = true
		}
	}
	if !found {
		t.Fatalf("no warning with the full error under request id %s in the log", rid)
	}

	// Still full: the same batch keeps failing, and is not stored.
	if rep := send(seq); rep.status != http.StatusServiceUnavailable {
		t.Fatalf("retry on a full disk: %d %s", rep.status, rep.body)
	}
	// Space returns: the same batch is stored (once), after the log's
	// pause before recovery.
	fs.SetFull(false)
	var rep reply
	for range 200 {
		if rep = send(seq); rep.status == http.StatusOK {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rep.status != http.StatusOK {
		t.Fatalf("appends did not resume once space returned: %d %s", rep.status, rep.body)
	}
	if rep := send(seq + 1); rep.status != http.StatusOK {
		t.Fatalf("append after recovery: %d %s", rep.status, rep.body)
	}

	// Restart: every acknowledged event, in order, and nothing else.
	e.ts.Close()
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	store, err := core.Open(e.coreCfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var got []string
	for from := uint64(0); ; {
		res, err := store.Read(t.Context(), core.ReadRequest{Tenant: "acme", Stream: "logs", Segment: "0", From: from})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Events) == 0 {
			break
		}
		for _, ev := range res.Events {
			got = append(got, string(ev.Data))
		}
		from = res.Next
	}
	if len(got) != len(acked) {
		t.Fatalf("after restart %d events, want the %d acknowledged", len(got), len(acked))
	}
	for i := range got {
		if got[i] != acked[i] {
			t.Fatalf("event %d after restart is %.10q, want %.10q", i, got[i], acked[i])
		}
	}
}
