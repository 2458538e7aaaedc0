package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestAppendBodies(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 1)
	e.mkStream("acme", "bin", "framed", 1)
	type ack = appendJSON
	cases := map[string]struct {
		stream, contentType string
		body                []byte
		want                []string // events stored, in order
	}{
		"ndjson":                {"logs", contentNDJSON, []byte("a\nbb\nccc\n"), []string{"a", "bb", "ccc"}},
		"ndjson last line open": {"logs", contentNDJSON + "; charset=utf-8", []byte("d\ne"), []string{"d", "e"}},
		"ndjson keeps \\r":      {"logs", contentNDJSON, []byte("f\r\n"), []string{"f\r"}},
		"framed":                {"bin", contentFramed, framed("x\ny", "", "z"), []string{"x\ny", "", "z"}},
		"framed into lines":     {"logs", contentFramed, framed("g", "h"), []string{"g", "h"}},
		"whole octet-stream":    {"bin", "application/octet-stream", []byte("one\nevent"), []string{"one\nevent"}},
		"whole json":            {"logs", "application/json", []byte(`{"a":1}`), []string{`{"a":1}`}},
		"whole, no type":        {"logs", "", []byte("plain"), []string{"plain"}},
		"whole line, newline":   {"logs", "text/plain", []byte("{\"a\":1}\n"), []string{`{"a":1}`}},
		"whole framed, newline": {"bin", "text/plain", []byte("kept\n"), []string{"kept\n"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			before := e.nextOffset("acme", c.stream, "0")
			var a ack
			e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", c.stream), contentType: c.contentType, body: c.body}).json(t, &a)
			if a.Segment != "0" || a.Count != len(c.want) || a.FirstOffset != before || a.Duplicate {
				t.Fatalf("ack %+v, want %d events from %d", a, len(c.want), before)
			}
			got := e.readSegment("acme", c.stream, "0", before)
			if len(got) != len(c.want) {
				t.Fatalf("stored %d events, want %d", len(got), len(c.want))
			}
			for i := range got {
				if string(got[i].Data) != c.want[i] {
					t.Fatalf("event %d = %q, want %q", i, got[i].Data, c.want[i])
				}
			}
		})
	}
}

func TestAppendRefusals(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 2)
	big := strings.Repeat("x", testMaxEvent+1)
	lines := func(n, size int) []byte {
		var b bytes.Buffer
		for range n {
			b.WriteString(strings.Repeat("y", size) + "\n")
		}
		return b.Bytes()
	}
	cases := map[string]struct {
		r    req
		want int
		code string
		says string // part of the message
	}{
		"newline in lines event": {req{contentType: "text/plain", body: []byte("a\nb")}, 400, "invalid_argument", "newline"},
		"two final newlines":     {req{contentType: "text/plain", body: []byte("a\n\n")}, 400, "invalid_argument", "newline"},
		"only a newline, whole":  {req{contentType: "text/plain", body: []byte("\n")}, 400, "invalid_argument", "newline"},
		"empty ndjson line":      {req{contentType: contentNDJSON, body: []byte("a\n\nb\n")}, 400, "invalid_argument", "line 2 is empty"},
		"only a newline":         {req{contentType: contentNDJSON, body: []byte("\n")}, 400, "invalid_argument", "empty"},
		"truncated frame":        {req{contentType: contentFramed, body: framed("abc")[:5]}, 400, "invalid_argument", "frame 1"},
		"truncated length":       {req{contentType: contentFramed, body: []byte{0, 0}}, 400, "invalid_argument", "4-byte length"},
		"empty body":             {req{contentType: "text/plain", body: []byte{}}, 400, "invalid_argument", "empty"},
		"event too large":        {req{contentType: contentNDJSON, body: []byte(big + "\n")}, 413, "too_large", "max_event_bytes"},
		"framed event too large": {req{contentType: contentFramed, body: framed(big)}, 413, "too_large", "max_event_bytes"},
		"whole too large":        {req{contentType: "text/plain", body: []byte(big)}, 413, "too_large", "max_event_bytes"},
		"batch too large":        {req{contentType: contentNDJSON, body: lines(testMaxBatch/512+1, 511)}, 413, "too_large", "max_batch_bytes"},
		"body too large":         {req{contentType: contentNDJSON, body: lines(2*testMaxBatch, 1)}, 413, "too_large", "limit"},
		"key and segment":        {req{path: "?key=a&segment=0", body: []byte("x")}, 400, "invalid_argument", "not both"},
		"seq without writer":     {req{body: []byte("x"), header: map[string]string{headerSeq: "1"}}, 400, "invalid_argument", headerWriterID},
		"writer without seq":     {req{body: []byte("x"), header: map[string]string{headerWriterID: "w"}}, 400, "invalid_argument", headerSeq},
		"bad seq":                {req{body: []byte("x"), header: map[string]string{headerWriterID: "w", headerSeq: "-1"}}, 400, "invalid_argument", "decimal"},
		"no such segment":        {req{path: "?segment=7", body: []byte("x")}, 404, "not_found", "segment"},
		"bad content type":       {req{contentType: "a/b; =", body: []byte("x")}, 400, "invalid_argument", "Content-Type"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := c.r
			r.method, r.path, r.token = "POST", eventsPath("acme", "logs")+c.r.path, e.root
			rep := e.do(r)
			if rep.status != c.want || rep.errCode(t) != c.code || !strings.Contains(string(rep.body), c.says) {
				t.Fatalf("%d %s; want %d %s mentioning %q", rep.status, rep.body, c.want, c.code, c.says)
			}
		})
	}
	if e.nextOffset("acme", "logs", "0")+e.nextOffset("acme", "logs", "1") != 0 {
		t.Fatal("a refused append stored events")
	}
	if e.srv.budget.used.Load() != 0 {
		t.Fatalf("budget leaks %d bytes", e.srv.budget.used.Load())
	}
	if rep := e.do(req{method: "POST", path: eventsPath("acme", "nosuch"), token: e.root, body: []byte("x")}); rep.status != 404 {
		t.Fatalf("append to missing stream: %d", rep.status)
	}
}

func TestIdempotentRetry(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 2)
	send := func(seq string, events string) (reply, appendJSON) {
		rep := e.do(req{method: "POST", path: eventsPath("acme", "logs") + "?segment=1", token: e.root,
			contentType: contentNDJSON, body: []byte(events),
			header: map[string]string{headerWriterID: "writer-1", headerSeq: seq}})
		var a appendJSON
		if rep.status == http.StatusOK {
			rep.json(t, &a)
		}
		return rep, a
	}
	_, first := send("5", "a\nb\n")
	_, again := send("5", "a\nb\n")
	if first.Duplicate || !again.Duplicate || again.FirstOffset != first.FirstOffset || again.Count != 2 {
		t.Fatalf("first %+v, retry %+v", first, again)
	}
	if n := e.nextOffset("acme", "logs", "1"); n != 2 {
		t.Fatalf("segment holds %d events after a retry, want 2", n)
	}
	_, next := send("6", "c\n")
	if next.Duplicate || next.FirstOffset != 2 {
		t.Fatalf("next batch %+v", next)
	}
	rep, _ := send("4", "old\n")
	if rep.status != http.StatusConflict || rep.errCode(t) != "sequence_conflict" {
		t.Fatalf("older seq: %d %s", rep.status, rep.body)
	}
	// The producer series count what was stored, the retry and the
	// refused batch apart.
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"silt_producer_events_total", []string{"tenant", "acme", "stream", "logs"}, 3},
		{"silt_producer_bytes_total", []string{"tenant", "acme", "stream", "logs"}, 3},
		{"silt_producer_duplicates_total", []string{"tenant", "acme", "stream", "logs"}, 1},
		{"silt_producer_errors_total", []string{"tenant", "acme", "stream", "logs", "reason", "sequence_conflict"}, 1},
		{"silt_producer_append_duration_seconds", []string{"tenant", "acme"}, 3},
	} {
		if got := e.series(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// A deleted stream's series go with it.
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/tenants/acme/streams/logs", token: e.root})
	if got := e.series("silt_producer_events_total", "tenant", "acme", "stream", "logs"); got != 0 {
		t.Errorf("events of the deleted stream still exported: %v", got)
	}
}

// slowBody is a request body without a length that blocks until released.
type slowBody struct {
	release chan struct{}
	data    []byte
}

func (b *slowBody) Read(p []byte) (int, error) {
	<-b.release
	if len(b.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

func TestInflightBudget(t *testing.T) {
	// Room for exactly one append of unknown length.
	e := newEnv(t, envOptions{api: func(c *Config) { c.MaxInflightBytes = 2 * testMaxBatch }})
	e.mkStream("acme", "logs", "lines", 1)

	slow := &slowBody{release: make(chan struct{}), data: []byte("held\n")}
	hr, _ := http.NewRequest("POST", e.ts.URL+eventsPath("acme", "logs"), slow)
	hr.Header.Set("Authorization", "Bearer "+e.root)
	hr.Header.Set("Content-Type", contentNDJSON)
	done := make(chan int)
	go func() {
		resp, err := e.ts.Client().Do(hr)
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	deadline := time.Now().Add(hangStop)
	for e.srv.budget.used.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("slow append never reserved its budget")
		}
		time.Sleep(time.Millisecond)
	}
	rep := e.do(req{method: "POST", path: eventsPath("acme", "logs"), token: e.root, body: []byte("x")})
	if rep.status != http.StatusServiceUnavailable || rep.errCode(t) != "overloaded" || rep.header.Get("Retry-After") != "1" {
		t.Fatalf("over budget: %d %s Retry-After=%q", rep.status, rep.body, rep.header.Get("Retry-After"))
	}
	if got := metricValue(t, e.srv.met.inflightBytes); got != 2*testMaxBatch {
		t.Fatalf("inflight gauge %v", got)
	}
	close(slow.release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("slow append: %d", code)
	}
	e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "logs"), body: []byte("x")})
	if e.srv.budget.used.Load() != 0 || metricValue(t, e.srv.met.inflightBytes) != 0 {
		t.Fatal("budget not returned")
	}
}

func (e *env) nextOffset(tenant, stream, seg string) uint64 {
	e.t.Helper()
	st, err := e.store.GetStream(e.t.Context(), tenant, stream)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range st.Segments {
		if s.ID == seg {
			return s.NextOffset
		}
	}
	e.t.Fatalf("no segment %s", seg)
	return 0
}

func (e *env) readSegment(tenant, stream, seg string, from uint64) []readLine {
	e.t.Helper()
	rep := e.must(http.StatusOK, req{method: "GET", path: fmt.Sprintf("%s?segment=%s&from=%d", eventsPath(tenant, stream), seg, from)})
	evs, _ := parseLines(e.t, rep.body)
	return evs
}

// appendKeyed appends n events per key, "key:i", one request each.
func (e *env) appendKeyed(tenant, stream string, keys []string, n int) {
	e.t.Helper()
	for i := range n {
		for _, k := range keys {
			e.must(http.StatusOK, req{method: "POST", path: eventsPath(tenant, stream) + "?key=" + k, body: fmt.Appendf(nil, "%s:%d", k, i)})
		}
	}
}

func TestReadWithCursor(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 3)
	keys := []string{"a", "b", "c", "d", "e", "f"}
	e.appendKeyed("acme", "logs", keys, 10)

	seen := map[string]bool{}
	lastOffset := map[string]int64{}
	cursor := ""
	for round := 0; ; round++ {
		if round > 100 {
			t.Fatal("cursor never reached the end")
		}
		path := eventsPath("acme", "logs") + "?max=7"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		rep := e.must(http.StatusOK, req{method: "GET", path: path})
		evs, next := parseLines(t, rep.body)
		if next == "" || rep.header.Get(headerNextCursor) != next {
			t.Fatalf("cursor line %q, header %q", next, rep.header.Get(headerNextCursor))
		}
		if len(evs) > 7 {
			t.Fatalf("max=7 returned %d", len(evs))
		}
		for _, ev := range evs {
			if seen[string(ev.Data)] {
				t.Fatalf("event %q read twice", ev.Data)
			}
			seen[string(ev.Data)] = true
			if last, ok := lastOffset[ev.Segment]; ok && int64(ev.Offset) <= last {
				t.Fatalf("segment %s went back from %d to %d", ev.Segment, last, ev.Offset)
			}
			lastOffset[ev.Segment] = int64(ev.Offset)
			if ev.Text == nil || *ev.Text != string(ev.Data) {
				t.Fatalf("lines event without text: %+v", ev)
			}
		}
		cursor = next
		if len(evs) == 0 {
			break
		}
	}
	if len(seen) != len(keys)*10 {
		t.Fatalf("read %d events, want %d", len(seen), len(keys)*10)
	}
	// From the end: nothing, until more arrives.
	rep := e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "logs") + "?cursor=end"})
	evs, end := parseLines(t, rep.body)
	if len(evs) != 0 || end != cursor {
		t.Fatalf("cursor=end gave %d events, cursor %q (want %q)", len(evs), end, cursor)
	}
	e.appendKeyed("acme", "logs", []string{"z"}, 1)
	rep = e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "logs") + "?cursor=" + end})
	if evs, _ := parseLines(t, rep.body); len(evs) != 1 || string(evs[0].Data) != "z:0" {
		t.Fatalf("after the end: %s", rep.body)
	}
}

func TestReadFairAcrossSegments(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 2)
	for i := range 50 {
		e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "logs") + "?segment=0", body: fmt.Appendf(nil, "zero-%d", i)})
	}
	for i := range 5 {
		e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "logs") + "?segment=1", body: fmt.Appendf(nil, "one-%d", i)})
	}
	evs, _ := parseLines(t, e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "logs") + "?max=20"}).body)
	per := map[string]int{}
	for _, ev := range evs {
		per[ev.Segment]++
	}
	if len(evs) != 20 || per["1"] != 5 || per["0"] != 15 {
		t.Fatalf("max=20 over a busy and a quiet segment gave %v", per)
	}
}

func TestReadRaw(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 1)
	e.mkStream("acme", "bin", "framed", 1)
	e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "logs"), contentType: contentNDJSON, body: []byte("a\nb\n")})
	e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "bin"), contentType: contentFramed, body: framed("x\n", "")})

	rep := e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "logs") + "?format=raw"})
	if string(rep.body) != "a\nb\n" || !strings.HasPrefix(rep.header.Get("Content-Type"), "text/plain") || rep.header.Get(headerNextCursor) == "" {
		t.Fatalf("raw lines: %q %v", rep.body, rep.header)
	}
	rep = e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "bin") + "?format=raw"})
	if !bytes.Equal(rep.body, framed("x\n", "")) || rep.header.Get("Content-Type") != contentFramed {
		t.Fatalf("raw framed: %q", rep.body)
	}
	// Framed events come back as base64 without a text field.
	evs, _ := parseLines(t, e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "bin")}).body)
	if len(evs) != 2 || string(evs[0].Data) != "x\n" || evs[0].Text != nil {
		t.Fatalf("framed ndjson: %+v", evs)
	}
	if _, err := time.Parse(time.RFC3339Nano, evs[0].Time); err != nil {
		t.Fatalf("time %q: %v", evs[0].Time, err)
	}
}

func TestReadRefusals(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 2)
	e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "logs") + "?segment=0", body: []byte("a")})
	other := encodeCursor([]position{{segment: "9", next: 0}})
	cases := map[string]struct {
		query string
		want  int
		code  string
	}{
		"from past the end":  {"segment=0&from=5", 416, "out_of_range"},
		"bad cursor":         {"cursor=!!!", 400, "invalid_argument"},
		"foreign cursor":     {"cursor=" + other, 400, "invalid_argument"},
		"no such segment":    {"segment=7", 404, "not_found"},
		"from alone":         {"from=3", 400, "invalid_argument"},
		"cursor and segment": {"cursor=end&segment=0", 400, "invalid_argument"},
		"zero max":           {"max=0", 400, "invalid_argument"},
		"bad format":         {"format=xml", 400, "invalid_argument"},
		"bad wait":           {"wait=soon", 400, "invalid_argument"},
		"bad follow":         {"follow=perhaps", 400, "invalid_argument"},
		"bad from":           {"segment=0&from=-1", 400, "invalid_argument"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rep := e.do(req{method: "GET", path: eventsPath("acme", "logs") + "?" + c.query, token: e.root})
			if rep.status != c.want || rep.errCode(t) != c.code {
				t.Fatalf("%d %s, want %d %s", rep.status, rep.body, c.want, c.code)
			}
		})
	}
	// from=end on one segment and max above the cap are fine.
	evs, _ := parseLines(t, e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "logs") + "?segment=0&from=end&max=99999"}).body)
	if len(evs) != 0 {
		t.Fatalf("from=end returned %d events", len(evs))
	}
}

func TestLongPoll(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 2)
	start := time.Now()
	rep := e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "logs") + "?wait=200ms"})
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("empty long-poll returned after %v", took)
	}
	if evs, cur := parseLines(t, rep.body); len(evs) != 0 || cur == "" {
		t.Fatalf("empty long-poll: %s", rep.body)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		e.store.Append(context.Background(), appendReq("acme", "logs", "late"))
	}()
	// A long-poll that the append did not wake answers empty when its
	// wait ends, so the event in the answer is what shows the wake-up.
	rep = e.must(http.StatusOK, req{method: "GET", path: eventsPath("acme", "logs") + "?wait=60s"})
	if evs, _ := parseLines(t, rep.body); len(evs) != 1 || string(evs[0].Data) != "late" {
		t.Fatalf("long-poll: %s", rep.body)
	}
	// wait is capped by max_wait: an hour's wait answers at all only if
	// capped; the minute is there to stop the test, not to time it.
	e2 := newEnv(t, envOptions{api: func(c *Config) { c.MaxWait = 50 * time.Millisecond }})
	e2.mkStream("acme", "logs", "lines", 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	hr, _ := http.NewRequestWithContext(ctx, "GET", e2.ts.URL+eventsPath("acme", "logs")+"?wait=1h", nil)
	hr.Header.Set("Authorization", "Bearer "+e2.root)
	resp, err := e2.ts.Client().Do(hr)
	if err != nil {
		t.Fatalf("wait not capped by max_wait: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("capped wait: %d", resp.StatusCode)
	}
}

// follower reads an ndjson follow response line by line.
type follower struct {
	resp  *http.Response
	lines chan readLine
	done  chan struct{}
}

func (e *env) follow(ctx context.Context, query string) *follower {
	e.t.Helper()
	hr, _ := http.NewRequestWithContext(ctx, "GET", e.ts.URL+eventsPath("acme", "logs")+"?follow=true&"+query, nil)
	hr.Header.Set("Authorization", "Bearer "+e.root)
	resp, err := e.ts.Client().Do(hr)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("follow: %d", resp.StatusCode)
	}
	f := &follower{resp: resp, lines: make(chan readLine, 1024), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer close(f.lines)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var l readLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				f.lines <- l
			}
		}
	}()
	return f
}

// nextEvent returns the next event line, skipping cursor lines.
func (f *follower) nextEvent(t *testing.T, timeout time.Duration) readLine {
	t.Helper()
	l, _ := f.nextEventCounting(t, timeout)
	return l
}

// nextEventCounting returns the next event line and how many cursor lines
// came before it.
func (f *follower) nextEventCounting(t *testing.T, timeout time.Duration) (readLine, int) {
	t.Helper()
	deadline := time.After(timeout)
	cursors := 0
	for {
		select {
		case l, ok := <-f.lines:
			if !ok {
				t.Fatal("follow ended")
			}
			if l.NextCursor == nil {
				return l, cursors
			}
			cursors++
		case <-deadline:
			t.Fatalf("no event within %v", timeout)
		}
	}
}

// A follow is woken by the append itself, not by its next heartbeat. Each
// batch of events is followed by one cursor line; a second cursor line
// before an event is a heartbeat, sent only after followHeartbeat of
// silence, so an event that came after one was not delivered on its
// append. Counting lines, not timing deliveries, keeps this independent
// of the machine's speed; the latency itself is a benchmark's business.
func TestFollowDeliversPromptly(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 4)
	e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "logs"), body: []byte("old")})
	ctx, cancel := context.WithCancel(t.Context())
	f := e.follow(ctx, "")
	// The timeouts stop a hung follow; they are not what is checked.
	if l := f.nextEvent(t, time.Minute); string(l.Data) != "old" {
		t.Fatalf("first event %q", l.Data)
	}
	var worst time.Duration
	for i := range 20 {
		start := time.Now()
		ev := fmt.Sprintf("new-%d", i)
		e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "logs") + "?key=" + ev, body: []byte(ev)})
		l, cursors := f.nextEventCounting(t, time.Minute)
		worst = max(worst, time.Since(start))
		if string(l.Data) != ev {
			t.Fatalf("got %q, want %q", l.Data, ev)
		}
		if cursors != 1 {
			t.Fatalf("event %d came after %d cursor lines, want 1 (the previous batch's): it waited for a heartbeat", i, cursors)
		}
	}
	t.Logf("slowest append-to-delivery: %v", worst)
	cancel()
	<-f.done
}

// hangStop bounds a wait that only a hung server reaches; it is never
// what a test checks.
const hangStop = time.Minute

// receive returns what ch delivers, failing the test if nothing comes
// within hangStop.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangStop):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// waitForGoroutineIn waits until some goroutine's stack holds fn.
func waitForGoroutineIn(t *testing.T, fn string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(hangStop); ; time.Sleep(time.Millisecond) {
		if n := runtime.Stack(buf, true); bytes.Contains(buf[:n], []byte(fn)) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for a goroutine in %s", fn)
		}
	}
}

func TestFollowRawTrailer(t *testing.T) {
	// Shutdown's grace for other requests is longer than the test may
	// wait, so only the drain can end the follow.
	e := newEnv(t, envOptions{api: func(c *Config) { c.ShutdownTimeout = time.Hour }})
	e.mkStream("acme", "logs", "lines", 1)
	e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "logs"), contentType: contentNDJSON, body: []byte("a\nb\n")})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error)
	go func() { served <- e.srv.Serve(ctx, ln, nil) }()

	hr, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+eventsPath("acme", "logs")+"?follow=true&format=raw", nil)
	hr.Header.Set("Authorization", "Bearer "+e.root)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make([]byte, 4)
	if _, err := io.ReadFull(resp.Body, got); err != nil || string(got) != "a\nb\n" {
		t.Fatalf("raw follow: %q %v", got, err)
	}
	// Shutting down ends the follow as it begins, with the resume cursor
	// in the trailer.
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		copied <- err
	}()
	stop()
	if err := receive(t, copied, "the follow to end on shutdown"); err != nil {
		t.Fatalf("follow body: %v", err)
	}
	cur := resp.Trailer.Get(headerNextCursor)
	pos, err := decodeCursor(cur)
	if err != nil || len(pos) != 1 || pos[0].next != 2 {
		t.Fatalf("trailer cursor %q: %v %v", cur, pos, err)
	}
	if err := receive(t, served, "Serve to return"); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	http.DefaultClient.CloseIdleConnections()
}

// Shutdown ends long-polls as it begins: their wait and shutdown's grace
// for other requests are both longer than the test may wait.
func TestServeDrainsLongPolls(t *testing.T) {
	e := newEnv(t, envOptions{noServer: true, api: func(c *Config) { c.MaxWait, c.ShutdownTimeout = time.Hour, time.Hour }})
	e.store.CreateTenant(t.Context(), "acme", nil)
	e.store.CreateStream(t.Context(), "acme", "logs", coreConfigLines())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error)
	go func() { served <- e.srv.Serve(ctx, ln, nil) }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	got := make(chan int)
	go func() {
		hr, _ := http.NewRequest("GET", base+eventsPath("acme", "logs")+"?wait=1h", nil)
		hr.Header.Set("Authorization", "Bearer "+e.root)
		resp, err := client.Do(hr)
		if err != nil {
			got <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	// Shutdown must begin while the long-poll waits, however slowly the
	// machine got it there.
	waitForGoroutineIn(t, "api.(*streamReader).wait")
	stop()
	if code := receive(t, got, "the long-poll to be drained"); code != http.StatusOK {
		t.Fatalf("drained long-poll: %d", code)
	}
	if err := receive(t, served, "Serve to return"); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener still open after Serve returned")
	}
}

func TestClosedStore(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 1)
	e.store.Close()
	for _, r := range []req{
		{method: "GET", path: "/readyz"},
		{method: "POST", path: eventsPath("acme", "logs"), token: e.root, body: []byte("x")},
	} {
		rep := e.do(r)
		if rep.status != http.StatusServiceUnavailable || rep.errCode(t) != "shutting_down" || rep.header.Get("Retry-After") == "" {
			t.Fatalf("%s %s on a closed store: %d %s", r.method, r.path, rep.status, rep.body)
		}
	}
}

func TestBodyReadTimeout(t *testing.T) {
	e := newEnv(t, envOptions{api: func(c *Config) { c.ReadTimeout = 100 * time.Millisecond }})
	e.mkStream("acme", "logs", "lines", 1)
	stuck := &slowBody{release: make(chan struct{})}
	defer close(stuck.release)
	hr, _ := http.NewRequest("POST", e.ts.URL+eventsPath("acme", "logs"), stuck)
	hr.Header.Set("Authorization", "Bearer "+e.root)
	resp, err := e.ts.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %d", resp.StatusCode)
	}
	if e.srv.budget.used.Load() != 0 {
		t.Fatal("a timed-out append kept its budget")
	}
}
