package api

import (
	"net/http"
	"strconv"
	"testing"
)

// TestWriterIDBelongsToPrincipal checks that a writer id is bound to the
// principal that first used it on a stream: another principal with append
// on the stream gets 409 writer_conflict with the same id — on any
// segment, with any sequence number, before and after a restart — and
// never the duplicate ack that would tell it, or make the owner's retry
// look like, the batch was stored.
func TestWriterIDBelongsToPrincipal(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 2)
	alice := e.user("alice", "append:acme/logs")
	mallory := e.user("mallory", "append:acme/logs")
	send := func(token, segment, writer string, seq int, body string) (reply, appendJSON) {
		t.Helper()
		rep := e.do(req{method: "POST", path: eventsPath("acme", "logs") + "?segment=" + segment, token: token, body: []byte(body),
			header: map[string]string{headerWriterID: writer, headerSeq: strconv.Itoa(seq)}})
		var a appendJSON
		if rep.status == http.StatusOK {
			rep.json(t, &a)
		}
		return rep, a
	}
	_, first := send(alice, "0", "w", 5, "alice-5")
	if first.Duplicate {
		t.Fatalf("alice's first batch: %+v", first)
	}

	takeovers := map[string]struct {
		segment string
		seq     int
	}{
		"same seq, same segment":    {"0", 5},
		"older seq":                 {"0", 1},
		"newer seq":                 {"0", 6},
		"huge seq":                  {"0", 1 << 40},
		"segment alice did not use": {"1", 1},
	}
	check := func(t *testing.T) {
		for name, c := range takeovers {
			t.Run(name, func(t *testing.T) {
				rep, _ := send(mallory, c.segment, "w", c.seq, "mallory")
				if rep.status != http.StatusConflict || rep.errCode(t) != "writer_conflict" {
					t.Fatalf("mallory with alice's writer id: %d %s, want 409 writer_conflict", rep.status, rep.body)
				}
			})
		}
	}
	check(t)
	// Alice's retry is answered as hers, with her offsets.
	rep, again := send(alice, "0", "w", 5, "alice-5")
	if rep.status != http.StatusOK || !again.Duplicate || again.FirstOffset != first.FirstOffset {
		t.Fatalf("alice's retry: %d %s", rep.status, rep.body)
	}
	if _, next := send(alice, "0", "w", 6, "alice-6"); next.Duplicate || next.FirstOffset != first.FirstOffset+1 {
		t.Fatalf("alice's next batch: %+v", next)
	}

	e.restart()
	t.Run("after restart", check)
	rep, again = send(alice, "0", "w", 6, "alice-6")
	if rep.status != http.StatusOK || !again.Duplicate {
		t.Fatalf("alice's retry after restart: %d %s", rep.status, rep.body)
	}
	// Mallory's own writer ids are hers.
	if rep, _ := send(mallory, "1", "m", 1, "mallory-1"); rep.status != http.StatusOK {
		t.Fatalf("mallory's own writer: %d %s", rep.status, rep.body)
	}
	if n0, n1 := e.nextOffset("acme", "logs", "0"), e.nextOffset("acme", "logs", "1"); n0 != 2 || n1 != 1 {
		t.Fatalf("segments hold %d and %d events, want alice's 2 and mallory's own 1", n0, n1)
	}
}
