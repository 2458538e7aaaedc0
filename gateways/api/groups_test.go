package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/silt-io/silt/core"
)

func groupsPath(tenant string) string { return "/v1/tenants/" + tenant + "/groups" }

func groupPath(tenant, group string) string { return groupsPath(tenant) + "/" + group }

// fill appends n events to one segment.
func (e *env) fill(tenant, stream, segment string, n int) {
	e.t.Helper()
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = fmt.Appendf(nil, "ev-%d", i)
	}
	if _, err := e.store.Append(e.t.Context(), core.AppendRequest{Tenant: tenant, Stream: stream, Segment: segment, Events: evs}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) mkGroup(tenant, name string, start map[string]any, streams ...string) {
	e.t.Helper()
	e.must(http.StatusCreated, req{method: "POST", path: groupsPath(tenant),
		body: jsonBody(e.t, map[string]any{"name": name, "streams": streams, "start": start})})
}

func TestGroupLifecycle(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "orders", "lines", 2)
	e.fill("acme", "orders", "0", 7)
	e.fill("acme", "orders", "1", 3)
	e.mkGroup("acme", "billing", map[string]any{"kind": "head"}, "orders")

	var list groupList
	e.must(http.StatusOK, req{method: "GET", path: groupsPath("acme")}).json(t, &list)
	if len(list.Groups) != 1 || list.Groups[0].Name != "billing" || list.Groups[0].SessionTimeout != "10s" {
		t.Fatalf("list: %+v", list)
	}

	var a assignmentJSON
	e.must(http.StatusOK, req{method: "POST", path: groupPath("acme", "billing") + "/members",
		body: jsonBody(t, map[string]any{"member": "r1"})}).json(t, &a)
	if a.Member != "r1" || a.Generation != 1 || len(a.Segments) != 2 {
		t.Fatalf("join: %+v", a)
	}
	e.must(http.StatusNoContent, req{method: "POST", path: groupPath("acme", "billing") + "/members/r1/commit",
		body: jsonBody(t, map[string]any{"generation": 1, "positions": []map[string]any{{"stream": "orders", "segment": "0", "offset": 5}}})})

	var lag struct {
		EventsBehind uint64 `json:"events_behind"`
		Segments     []struct {
			Segment      string `json:"segment"`
			Committed    uint64 `json:"committed"`
			EventsBehind uint64 `json:"events_behind"`
			Reader       string `json:"reader"`
		} `json:"segments"`
	}
	e.must(http.StatusOK, req{method: "GET", path: groupPath("acme", "billing") + "/lag"}).json(t, &lag)
	if lag.EventsBehind != 5 || lag.Segments[0].Committed != 5 || lag.Segments[0].EventsBehind != 2 || lag.Segments[1].EventsBehind != 3 || lag.Segments[0].Reader != "r1" {
		t.Fatalf("lag: %+v", lag)
	}
	var total map[string]any
	e.must(http.StatusOK, req{method: "GET", path: groupPath("acme", "billing") + "/lag?segments=false"}).json(t, &total)
	if segs, ok := total["segments"].([]any); total["events_behind"] != 5.0 || !ok || len(segs) != 0 {
		t.Fatalf("lag totals: %+v", total)
	}

	// A second reader takes one segment: r1's generation is over.
	e.must(http.StatusOK, req{method: "POST", path: groupPath("acme", "billing") + "/members",
		body: jsonBody(t, map[string]any{"member": "r2"})})
	rep := e.must(http.StatusConflict, req{method: "POST", path: groupPath("acme", "billing") + "/members/r1/heartbeat",
		body: jsonBody(t, map[string]any{"generation": 1})})
	if code := rep.errCode(t); code != "rejoin" || !strings.Contains(string(rep.body), "join again") {
		t.Fatalf("stale heartbeat: %s", rep.body)
	}
	e.must(http.StatusConflict, req{method: "POST", path: groupPath("acme", "billing") + "/members/r1/commit",
		body: jsonBody(t, map[string]any{"generation": 1, "positions": []map[string]any{{"stream": "orders", "segment": "0", "offset": 6}}})})

	var d groupJSON
	e.must(http.StatusOK, req{method: "GET", path: groupPath("acme", "billing")}).json(t, &d)
	if d.Generation != 2 || len(d.Members) != 2 || d.Positions[0].Offset != 5 {
		t.Fatalf("describe: %+v", d)
	}

	rep = e.must(http.StatusConflict, req{method: "POST", path: groupPath("acme", "billing") + "/reset",
		body: jsonBody(t, map[string]any{"start": map[string]any{"kind": "tail"}})})
	if !strings.Contains(string(rep.body), "force") {
		t.Fatalf("reset of a running group: %s", rep.body)
	}
	e.must(http.StatusOK, req{method: "POST", path: groupPath("acme", "billing") + "/reset",
		body: jsonBody(t, map[string]any{"start": map[string]any{"kind": "tail"}, "force": true})}).json(t, &d)
	if len(d.Members) != 0 || d.Positions[0].Offset != 7 || d.Positions[1].Offset != 3 {
		t.Fatalf("after forced reset: %+v", d)
	}
	e.must(http.StatusOK, req{method: "GET", path: groupPath("acme", "billing") + "/lag"}).json(t, &lag)
	if lag.EventsBehind != 0 {
		t.Fatalf("lag after reset to tail: %+v", lag)
	}
	e.must(http.StatusOK, req{method: "POST", path: groupPath("acme", "billing") + "/members",
		body: jsonBody(t, map[string]any{"member": "r1"})})
	e.must(http.StatusNoContent, req{method: "DELETE", path: groupPath("acme", "billing") + "/members/r1"})
	e.must(http.StatusNoContent, req{method: "DELETE", path: groupPath("acme", "billing")})
	e.must(http.StatusNotFound, req{method: "GET", path: groupPath("acme", "billing")})
}

// TestGroupErrors: each refusal has its status and a message, and leaves
// the group as it was.
func TestGroupErrors(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "orders", "lines", 2)
	e.mkStream("acme", "doomed", "lines", 1)
	e.fill("acme", "orders", "0", 4)
	e.mkGroup("acme", "g", map[string]any{"kind": "head"}, "orders")
	e.mkGroup("acme", "orphan", map[string]any{"kind": "head"}, "doomed")
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/tenants/acme/streams/doomed"})

	pos := func(seg string, off int) map[string]any {
		return map[string]any{"kind": "positions", "positions": []map[string]any{{"stream": "orders", "segment": seg, "offset": off}}}
	}
	for _, tc := range []struct {
		name   string
		r      req
		status int
		msg    string
	}{
		{"describe unknown group", req{method: "GET", path: groupPath("acme", "nope")}, 404, `group "nope"`},
		{"lag of unknown group", req{method: "GET", path: groupPath("acme", "nope") + "/lag"}, 404, `group "nope"`},
		{"lag totals of unknown group", req{method: "GET", path: groupPath("acme", "nope") + "/lag?segments=false"}, 404, `group "nope"`},
		{"lag with bad segments flag", req{method: "GET", path: groupPath("acme", "g") + "/lag?segments=maybe"}, 400, `segments "maybe"`},
		{"join unknown group", req{method: "POST", path: groupPath("acme", "nope") + "/members"}, 404, `group "nope"`},
		{"delete unknown group", req{method: "DELETE", path: groupPath("acme", "nope")}, 404, `group "nope"`},
		{"bad group name", req{method: "GET", path: groupPath("acme", "_x")}, 400, "want"},
		{"create over unknown stream", req{method: "POST", path: groupsPath("acme"), body: jsonBody(t, map[string]any{"name": "h", "streams": []string{"nope"}})}, 404, `stream "nope"`},
		{"create existing", req{method: "POST", path: groupsPath("acme"), body: jsonBody(t, map[string]any{"name": "g", "streams": []string{"orders"}})}, 409, "already exists"},
		{"create past the end", req{method: "POST", path: groupsPath("acme"), body: jsonBody(t, map[string]any{"name": "h", "streams": []string{"orders"}, "start": pos("0", 5)})}, 400, "past its end"},
		{"create at unknown segment", req{method: "POST", path: groupsPath("acme"), body: jsonBody(t, map[string]any{"name": "h", "streams": []string{"orders"}, "start": pos("9", 0)})}, 400, `segment "9"`},
		{"create with bad time", req{method: "POST", path: groupsPath("acme"), body: jsonBody(t, map[string]any{"name": "h", "streams": []string{"orders"}, "start": map[string]any{"kind": "time", "time": "yesterday"}})}, 400, "RFC 3339"},
		{"create with bad timeout", req{method: "POST", path: groupsPath("acme"), body: jsonBody(t, map[string]any{"name": "h", "streams": []string{"orders"}, "session_timeout": "1ms"})}, 400, "session timeout"},
		{"reset past the end", req{method: "POST", path: groupPath("acme", "g") + "/reset", body: jsonBody(t, map[string]any{"start": pos("1", 1)})}, 400, "past its end"},
		{"reset without start", req{method: "POST", path: groupPath("acme", "g") + "/reset", body: jsonBody(t, map[string]any{})}, 400, "start.kind"},
		{"commit by a stranger", req{method: "POST", path: groupPath("acme", "g") + "/members/who/commit", body: jsonBody(t, map[string]any{"generation": 0, "positions": []map[string]any{{"stream": "orders", "segment": "0", "offset": 1}}})}, 409, "join again"},
		{"bad member id", req{method: "POST", path: groupPath("acme", "g") + "/members", body: jsonBody(t, map[string]any{"member": "a b"})}, 400, "session id"},
		{"join over deleted stream", req{method: "POST", path: groupPath("acme", "orphan") + "/members"}, 409, "was deleted"},
		{"lag over deleted stream", req{method: "GET", path: groupPath("acme", "orphan") + "/lag"}, 409, "was deleted"},
		{"lag totals over deleted stream", req{method: "GET", path: groupPath("acme", "orphan") + "/lag?segments=false"}, 409, "was deleted"},
		{"reset over deleted stream", req{method: "POST", path: groupPath("acme", "orphan") + "/reset", body: jsonBody(t, map[string]any{"start": map[string]any{"kind": "head"}})}, 409, "was deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := e.must(http.StatusOK, req{method: "GET", path: groupPath("acme", "g")}).body
			var eb errorBody
			e.must(tc.status, tc.r).json(t, &eb)
			if !strings.Contains(eb.Error.Message, tc.msg) {
				t.Errorf("message %q does not say %q", eb.Error.Message, tc.msg)
			}
			if after := e.must(http.StatusOK, req{method: "GET", path: groupPath("acme", "g")}).body; string(after) != string(before) {
				t.Errorf("group changed:\n%s\n%s", before, after)
			}
			var list groupList
			e.must(http.StatusOK, req{method: "GET", path: groupsPath("acme")}).json(t, &list)
			if len(list.Groups) != 2 {
				t.Errorf("%d groups after a refusal, want 2", len(list.Groups))
			}
		})
	}
	// The group over the deleted stream can still be deleted.
	e.must(http.StatusNoContent, req{method: "DELETE", path: groupPath("acme", "orphan")})

	// A tenant goes only once its groups have gone.
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/tenants/acme/streams/orders"})
	var eb errorBody
	e.must(http.StatusConflict, req{method: "DELETE", path: "/v1/tenants/acme"}).json(t, &eb)
	if !strings.Contains(eb.Error.Message, "reader group") {
		t.Fatalf("tenant delete with a group left: %q", eb.Error.Message)
	}
	e.must(http.StatusNoContent, req{method: "DELETE", path: groupPath("acme", "g")})
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/tenants/acme"})
}

func TestGroupAccess(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "orders", "lines", 1)
	e.mkStream("acme", "audit", "lines", 1)
	e.mkStream("other", "orders", "lines", 1)
	e.mkGroup("acme", "both", map[string]any{"kind": "head"}, "orders", "audit")
	e.mkGroup("acme", "one", map[string]any{"kind": "head"}, "orders")
	e.mkGroup("other", "one", map[string]any{"kind": "tail"}, "orders")

	reader := e.user("reader", "read:acme/orders")
	owner := e.user("owner", "admin:acme/orders")
	outsider := e.user("outsider", "admin:other")
	for _, tc := range []struct {
		name   string
		r      req
		status int
	}{
		{"reader joins", req{method: "POST", path: groupPath("acme", "one") + "/members", token: reader}, 200},
		{"reader sees lag", req{method: "GET", path: groupPath("acme", "one") + "/lag", token: reader}, 200},
		{"reader cannot join a group over a stream it cannot read", req{method: "POST", path: groupPath("acme", "both") + "/members", token: reader}, 403},
		{"reader cannot describe", req{method: "GET", path: groupPath("acme", "one"), token: reader}, 403},
		{"reader cannot create", req{method: "POST", path: groupsPath("acme"), token: reader, body: jsonBody(t, map[string]any{"name": "mine", "streams": []string{"orders"}})}, 403},
		{"reader cannot reset", req{method: "POST", path: groupPath("acme", "one") + "/reset", token: reader, body: jsonBody(t, map[string]any{"start": map[string]any{"kind": "tail"}, "force": true})}, 403},
		{"stream admin describes", req{method: "GET", path: groupPath("acme", "one"), token: owner}, 200},
		{"stream admin cannot describe a group over another stream", req{method: "GET", path: groupPath("acme", "both"), token: owner}, 403},
		{"stream admin creates", req{method: "POST", path: groupsPath("acme"), token: owner, body: jsonBody(t, map[string]any{"name": "mine", "streams": []string{"orders"}})}, 201},
		{"stream admin cannot create over another stream", req{method: "POST", path: groupsPath("acme"), token: owner, body: jsonBody(t, map[string]any{"name": "theirs", "streams": []string{"orders", "audit"}})}, 403},
		{"other tenant's admin cannot describe", req{method: "GET", path: groupPath("acme", "one"), token: outsider}, 403},
		{"other tenant's admin cannot list", req{method: "GET", path: groupsPath("acme"), token: outsider}, 403},
		{"unknown group is 403 to the other tenant's admin too", req{method: "GET", path: groupPath("acme", "nope"), token: outsider}, 403},
		{"other tenant's admin describes its own group of the same name", req{method: "GET", path: groupPath("other", "one"), token: outsider}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := e.do(tc.r)
			if rep.status != tc.status {
				t.Fatalf("status %d, want %d: %s", rep.status, tc.status, rep.body)
			}
		})
	}
	var list groupList
	e.must(http.StatusOK, req{method: "GET", path: groupsPath("acme"), token: owner}).json(t, &list)
	var got []string
	for _, g := range list.Groups {
		got = append(got, g.Name)
	}
	if fmt.Sprint(got) != "[mine one]" {
		t.Fatalf("stream admin lists %v, want [mine one] (not the group over a stream it does not administer)", got)
	}
	e.must(http.StatusOK, req{method: "GET", path: groupsPath("other"), token: outsider}).json(t, &list)
	if len(list.Groups) != 1 || list.Groups[0].Tenant != "other" {
		t.Fatalf("other tenant lists %+v", list)
	}
}

func TestGroupMetrics(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "orders", "lines", 2)
	e.fill("acme", "orders", "0", 6)
	e.mkGroup("acme", "g", map[string]any{"kind": "head"}, "orders")
	e.must(http.StatusOK, req{method: "POST", path: groupPath("acme", "g") + "/members", body: jsonBody(t, map[string]any{"member": "r1"})})
	e.must(http.StatusNoContent, req{method: "POST", path: groupPath("acme", "g") + "/members/r1/commit",
		body: jsonBody(t, map[string]any{"generation": 1, "positions": []map[string]any{{"stream": "orders", "segment": "0", "offset": 2}}})})
	st, err := e.store.GetStream(t.Context(), "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	sg := st.Segments[0]
	// The bytes read are estimated from the segment's mean record size.
	wantBytes := int64(float64(sg.Bytes) / float64(sg.NextOffset-sg.FirstOffset) * 2)
	if wantBytes <= 0 {
		t.Fatalf("segment 0 holds %d bytes", sg.Bytes)
	}
	body := string(e.must(http.StatusOK, req{method: "GET", path: "/metrics"}).body)
	for _, want := range []string{
		fmt.Sprintf(`silt_group_committed_bytes_total{group="g",tenant="acme"} %d`, wantBytes),
		`silt_group_readers{group="g",tenant="acme"} 1`,
		`silt_group_rebalances_total{group="g",tenant="acme"} 1`,
		`silt_group_commits_total{group="g",tenant="acme"} 1`,
		`silt_group_committed_events_total{group="g",tenant="acme"} 2`,
		`silt_group_lag_events{group="g",tenant="acme"} 4`,
		`silt_group_lag_errors{group="g",tenant="acme"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
