package api

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/silt-io/silt/core"
)

// tinyEvents returns an ndjson body of n one-byte events.
func tinyEvents(n int) []byte { return bytes.Repeat([]byte("a\n"), n) }

// framedEmpty returns a framed body of n empty events.
func framedEmpty(n int) []byte { return make([]byte, 4*n) }

// TestAppendNeverFits checks that an append that no amount of waiting
// would let through gets 413 naming the limit, its value and its config
// key — never 503 with Retry-After, which a client that honours it would
// retry forever.
func TestAppendNeverFits(t *testing.T) {
	cases := map[string]struct {
		core        func(*core.Config)
		api         func(*Config)
		contentType string
		body        []byte
		says        []string
	}{
		// The request, against the embedded defaults: 4 MB of
		// two million one-byte events.
		"two million tiny events, defaults": {
			core:        func(c *core.Config) { c.Limits = core.DefaultConfig().Limits },
			api:         func(c *Config) { c.MaxInflightBytes = DefaultConfig().MaxInflightBytes },
			contentType: contentNDJSON,
			body:        tinyEvents(2_000_000),
			says:        []string{"core.limits.max_batch_events", strconv.Itoa(core.DefaultConfig().Limits.MaxBatchEvents)},
		},
		"events per batch, ndjson": {
			core:        func(c *core.Config) { c.Limits.MaxBatchEvents = 100 },
			contentType: contentNDJSON,
			body:        tinyEvents(101),
			says:        []string{"core.limits.max_batch_events", "100"},
		},
		"events per batch, framed": {
			core:        func(c *core.Config) { c.Limits.MaxBatchEvents = 100 },
			contentType: contentFramed,
			body:        framedEmpty(101),
			says:        []string{"core.limits.max_batch_events", "100"},
		},
		// Within the event count limit, but the per-event memory of 4096
		// empty events is more than the whole in-flight budget.
		"in-flight bytes, framed": {
			api:         func(c *Config) { c.MaxInflightBytes = 2 * testMaxBatch },
			contentType: contentFramed,
			body:        framedEmpty(2 * testMaxBatch / 4),
			says:        []string{"api.max_inflight_bytes", strconv.Itoa(2 * testMaxBatch)},
		},
		"in-flight bytes, ndjson": {
			api:         func(c *Config) { c.MaxInflightBytes = 2 * testMaxBatch },
			contentType: contentNDJSON,
			body:        tinyEvents(testMaxBatch),
			says:        []string{"api.max_inflight_bytes", strconv.Itoa(2 * testMaxBatch)},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, envOptions{core: c.core, api: c.api})
			e.mkStream("acme", "logs", "framed", 1)
			// The server is idle: nothing else holds the budget.
			for attempt := range 2 {
				rep := e.do(req{method: "POST", path: eventsPath("acme", "logs"), token: e.root, contentType: c.contentType, body: c.body})
				if rep.status != http.StatusRequestEntityTooLarge || rep.errCode(t) != "too_large" {
					t.Fatalf("attempt %d: %d %s, want 413 too_large", attempt, rep.status, rep.body)
				}
				if ra := rep.header.Get("Retry-After"); ra != "" {
					t.Fatalf("413 carries Retry-After %q", ra)
				}
				for _, s := range c.says {
					if !strings.Contains(string(rep.body), s) {
						t.Fatalf("message does not name %q: %s", s, rep.body)
					}
				}
			}
			if n := e.nextOffset("acme", "logs", "0"); n != 0 {
				t.Fatalf("refused batches stored %d events", n)
			}
			if u := e.srv.budget.used.Load(); u != 0 {
				t.Fatalf("budget leaks %d bytes", u)
			}
			if got := metricValue(t, e.srv.met.rejected); got != 0 {
				t.Fatalf("overload rejections = %v; a request that can never fit is no overload", got)
			}
			// A batch within every limit still goes through.
			e.must(http.StatusOK, req{method: "POST", path: eventsPath("acme", "logs"), contentType: contentFramed, body: framed("a", "b")})
		})
	}
}

// TestCoreBatchEvents checks the engine's own check of the event count,
// for callers that do not come through the API.
func TestCoreBatchEvents(t *testing.T) {
	e := newEnv(t, envOptions{core: func(c *core.Config) { c.Limits.MaxBatchEvents = 3 }, noServer: true})
	if _, err := e.store.CreateTenant(t.Context(), "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateStream(t.Context(), "acme", "logs", coreConfigLines()); err != nil {
		t.Fatal(err)
	}
	_, err := e.store.Append(t.Context(), appendReq("acme", "logs", "a", "b", "c", "d"))
	if err == nil || !strings.Contains(err.Error(), "max_batch_events") {
		t.Fatalf("4 events over a limit of 3: %v", err)
	}
	if _, err := e.store.Append(t.Context(), appendReq("acme", "logs", "a", "b", "c")); err != nil {
		t.Fatal(err)
	}
}
