package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium finds Debian's chromium. Without it the browser test skips
// with the reason, except in CI (CI=true), where a missing browser is a
// failure: the Makefile's test target installs it first (make chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true but chromium is not installed (make chromium installs Debian's package); the console's browser test must run in CI")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium, or make chromium): the console's browser test did not run")
	return ""
}

// consoleAPI sends one request to s's API with tok and decodes a JSON answer
// into out (when not nil), failing the test on any status but want.
func consoleAPI(t *testing.T, s *siltServer, tok, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.api+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// status answers the status of an authenticated GET or POST.
func consoleStatus(t *testing.T, s *siltServer, method, path, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, s.api+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestConsoleInBrowser drives Debian's chromium through the console of a
// real `silt serve`: a wrong token shows the API's 401; root logs in, sees
// both tenants, opens a stream whose append rate chart gets points with a
// rate above zero while events are appended, and a reader group whose lag
// matches the API's; health and queries show their state (or that the
// server lacks them); a token with read on one tenant sees only that one
// and gets the API's 403 for the other. Screenshots of each step go to the
// test's artifact directory (go test -artifacts, or $SILT_ARTIFACTS).
func TestConsoleInBrowser(t *testing.T) {
	browser := chromium(t)
	s := startServer(t, t.TempDir())
	root := s.token

	consoleAPI(t, s, root, "POST", "/v1/tenants", map[string]any{"name": "acme"}, 201, nil)
	consoleAPI(t, s, root, "POST", "/v1/tenants", map[string]any{"name": "other"}, 201, nil)
	consoleAPI(t, s, root, "POST", "/v1/tenants/acme/streams", map[string]any{"name": "clicks", "segments": 2}, 201, nil)
	consoleAPI(t, s, root, "POST", "/v1/tenants/other/streams", map[string]any{"name": "secret"}, 201, nil)
	consoleAPI(t, s, root, "POST", "/v1/tenants/acme/groups", map[string]any{"name": "billing", "streams": []string{"clicks"}}, 201, nil)
	consoleAPI(t, s, root, "POST", "/v1/principals", map[string]any{"name": "ann"}, 201, nil)
	var issued struct{ Token string }
	consoleAPI(t, s, root, "POST", "/v1/principals/ann/tokens", map[string]any{"label": "console"}, 201, &issued)
	consoleAPI(t, s, root, "POST", "/v1/grants", map[string]any{"principal": "ann", "action": "read", "resource": "acme"}, 201, nil)

	artifacts := os.Getenv("SILT_ARTIFACTS")
	if artifacts != "" {
		artifacts = filepath.Join(artifacts, t.Name())
		if err := os.MkdirAll(artifacts, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		artifacts = t.ArtifactDir()
	}
	t.Logf("screenshots in %s", artifacts)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
		// Root in a container has no user namespaces for the sandbox.
		chromedp.NoSandbox,
	)
	// A hang stop, not a speed bound: a console that shows nothing within
	// two minutes is broken.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()

	// Script exceptions and security messages (a CSP violation) fail the
	// test; network errors are expected (the 401 and 403 asked for).
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var mu sync.Mutex
	var pageErrs []string
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range chromedp.Console(bctx) {
			if err != nil {
				return
			}
			if m.IsException() || m.Source == "security" {
				mu.Lock()
				pageErrs = append(pageErrs, m.String())
				mu.Unlock()
			}
		}
	}()
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			buf, err := chromedp.FullScreenshot(100)(ctx, tg) // 100: PNG; below is JPEG
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(artifacts, name+".png"), buf, 0o644)
		})
	}
	fail := func(step string, err error) {
		t.Helper()
		html, _ := chromedp.Run(bctx, chromedp.OuterHTML(chromedp.CSS("main")))
		t.Fatalf("%s: %v\npage: %s", step, err, html)
	}
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			fail(step, err)
		}
	}
	// get runs one action that returns a value.
	text := func(step, sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			fail(step, err)
		}
		return v
	}
	eval := func(step, expr string) float64 {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[float64](expr))
		if err != nil {
			fail(step, err)
		}
		return v
	}
	// Views are hash routes: moving between them is a same-document
	// navigation, which fires no load event for Navigate to wait for.
	goTo := func(hash string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[any](fmt.Sprintf("location.hash = %q", hash))(ctx, tg)
			return err
		})
	}
	poll := func(expr string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Poll[bool](expr)(ctx, tg)
			return err
		})
	}
	visible := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.WaitVisible(chromedp.CSS(sel)) }
	login := func(tok string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(
			visible("#token"),
			chromedp.SetValue(chromedp.CSS("#token"), tok),
			chromedp.Click(chromedp.CSS("#login-submit")),
		)
	}

	// A wrong token: the API's own 401 is shown.
	run("bad token", chromedp.Navigate(s.api+"/console/"), login("silt_wrong"), visible("#login-error"), shot("01-bad-token"))
	if msg := text("bad token", "#login-error"); !strings.Contains(msg, "401") || !strings.Contains(msg, "unauthenticated") {
		t.Errorf("bad token shows %q, want the API's 401 unauthenticated", msg)
	}

	// Root sees both tenants, and its token stays out of localStorage and
	// the URL.
	run("root login", login(root), visible("#tenants"), shot("02-tenants"))
	if got := text("root login", "#tenants"); !strings.Contains(got, "acme") || !strings.Contains(got, "other") {
		t.Errorf("root's tenants: %q, want acme and other", got)
	}
	stored, err := chromedp.Run(bctx, chromedp.Evaluate[string](`JSON.stringify({local: Object.keys(localStorage).map(k => localStorage.getItem(k)), url: location.href})`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, root) {
		t.Errorf("the token leaked into localStorage or the URL: %s", stored)
	}

	// The stream page: events appended while it polls give rate points
	// above zero.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			req, _ := http.NewRequest("POST", s.api+"/v1/tenants/acme/streams/clicks/events",
				strings.NewReader(fmt.Sprintf("{\"k\":\"a\",\"n\":%d}\n{\"k\":\"b\",\"n\":%d}\n", i, i)))
			req.Header.Set("Authorization", "Bearer "+root)
			req.Header.Set("Content-Type", "application/x-ndjson")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}()
	run("stream page", goTo("#/t/acme/s/clicks"),
		poll(`[...document.querySelectorAll('#rate-chart circle.dot')].some(c => Number(c.dataset.y) > 0)`), shot("03-stream"))
	close(stop)
	wg.Wait()
	if rows := eval("stream page", `document.querySelectorAll('#segments-table tbody tr').length`); rows != 2 {
		t.Errorf("segments table has %v rows, want 2", rows)
	}

	// The group page shows the lag the API reports, once appends stopped.
	var lag struct {
		EventsBehind uint64 `json:"events_behind"`
	}
	consoleAPI(t, s, root, "GET", "/v1/tenants/acme/groups/billing/lag", nil, 200, &lag)
	if lag.EventsBehind == 0 {
		t.Fatal("the group is not behind; the test appended nothing")
	}
	run("group page", goTo("#/t/acme/g/billing"),
		poll(`document.querySelectorAll('#lag-chart circle.dot').length > 0 && document.querySelectorAll('#group-lag tbody tr').length == 2`),
		shot("04-group"))
	if shown := eval("group page", `Number(document.querySelector('#lag-chart circle.dot').dataset.y)`); uint64(shown) != lag.EventsBehind {
		t.Errorf("lag chart shows %v events behind, the API says %d", shown, lag.EventsBehind)
	}

	// Health and queries: their routes come with the introspection store
	// and query jobs; a server without them answers 404, and the views
	// must say so rather than fail.
	if code := consoleStatus(t, s, "GET", "/v1/health", ""); code == http.StatusNotFound {
		run("health absent", goTo("#/health"), visible("#unavailable"), shot("05-health"))
		if msg := text("health absent", "#unavailable"); !strings.Contains(msg, "not available on this server") {
			t.Errorf("health on a server without /v1/health shows %q", msg)
		}
	} else {
		run("health", goTo("#/health"), visible("#health-heads"), shot("05-health"))
		// The test's own API requests are in the introspection store.
		if rows := text("health", "#health-heads tbody"); !strings.Contains(rows, "api") {
			t.Errorf("health shows no api head: %q", rows)
		}
	}
	query := "from acme/clicks | stats count() by k"
	if code := consoleStatus(t, s, "POST", "/v1/queries", `{}`); code == http.StatusNotFound {
		run("query absent", goTo("#/query"), visible("#query-text"), chromedp.SetValue(chromedp.CSS("#query-text"), query),
			chromedp.Click(chromedp.CSS("#query-run")), visible("#unavailable"), shot("06-query"))
		if msg := text("query absent", "#unavailable"); !strings.Contains(msg, "not available on this server") {
			t.Errorf("a query on a server without /v1/queries shows %q", msg)
		}
	} else {
		run("query", goTo("#/query"), visible("#query-text"), chromedp.SetValue(chromedp.CSS("#query-text"), query),
			chromedp.Click(chromedp.CSS("#query-run")), visible("#result-table"), shot("06-query"))
		// Every append added one event of each key.
		var total uint64
		var st struct {
			Segments []struct {
				NextOffset uint64 `json:"next_offset"`
			}
		}
		consoleAPI(t, s, root, "GET", "/v1/tenants/acme/streams/clicks", nil, 200, &st)
		for _, sg := range st.Segments {
			total += sg.NextOffset
		}
		bars, err := chromedp.Run(bctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#result-chart rect.bar')].map(r => r.dataset.x + '=' + r.dataset.y).sort().join(' ')`))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("a=%d b=%d", total/2, total/2); bars != want {
			t.Errorf("count by k charts %q, want %q", bars, want)
		}
		// A query that does not parse shows the API's bad_query.
		run("bad query", chromedp.SetValue(chromedp.CSS("#query-text"), "from acme/clicks | wher k == 1"),
			chromedp.Click(chromedp.CSS("#query-run")), visible("#query-error"), shot("06-query-error"))
		if msg := text("bad query", "#query-error"); !strings.Contains(msg, "400 bad_query") || !strings.Contains(msg, "wher") {
			t.Errorf("a query that does not parse shows %q, want the API's 400 bad_query", msg)
		}
	}

	// A result's table and chart, whichever server answers the query: a
	// key and a count give bars, a time and a count a line, three columns
	// no chart.
	results, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(async () => {
		const m = await import('/console/ops.js');
		const show = (cols, rows) => {
			const d = document.createElement('div');
			m.renderResults(d, cols, rows);
			return {rows: d.querySelectorAll('#result-table tbody tr').length,
				bars: [...d.querySelectorAll('#result-chart rect.bar')].map(r => r.dataset.x + '=' + r.dataset.y),
				dots: [...d.querySelectorAll('#result-chart circle.dot')].map(c => Number(c.dataset.y))};
		};
		return JSON.stringify([
			show(['status', 'count'], [{status: '200', count: 5}, {status: '500', count: 2}]),
			show(['window_start', 'n'], [{window_start: '2026-12-06T06:01:00Z', n: 7}, {window_start: '2026-12-06T06:00:00Z', n: 3}]),
			show(['a', 'b', 'c'], [{a: 'x', b: 1, c: 2}]),
		]);
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	const wantResults = `[{"rows":2,"bars":["200=5","500=2"],"dots":[]},{"rows":2,"bars":[],"dots":[3,7]},{"rows":1,"bars":[],"dots":[]}]`
	if results != wantResults {
		t.Errorf("results rendered as %s, want %s", results, wantResults)
	}

	// A token with read on acme alone: other is neither listed nor shown.
	run("ann", chromedp.Click(chromedp.CSS("#logout")), login(issued.Token), visible("#tenants"), shot("07-ann-tenants"))
	if got := text("ann", "#tenants"); !strings.Contains(got, "acme") || strings.Contains(got, "other") {
		t.Errorf("ann's tenants: %q, want acme only", got)
	}
	run("ann denied", goTo("#/t/other"), visible("#view-error"), shot("08-ann-denied"))
	if msg := text("ann denied", "#view-error"); !strings.Contains(msg, "403") || !strings.Contains(msg, "forbidden") {
		t.Errorf("ann opening tenant other sees %q, want the API's 403", msg)
	}

	cancelBrowser()
	<-consoleDone
	mu.Lock()
	defer mu.Unlock()
	for _, e := range pageErrs {
		t.Errorf("page error: %s", e)
	}
}

// TestConsoleDisabled checks console.enabled: on by default, and off it
// leaves /console/ to the API's JSON 404.
func TestConsoleDisabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"default", nil, http.StatusOK},
		{"flag off", []string{"--console.enabled=false"}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, t.TempDir(), tc.args...)
			resp, err := http.Get(s.api + "/console/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("GET /console/: %d, want %d: %.200s", resp.StatusCode, tc.want, body)
			}
			if tc.want == http.StatusOK && !strings.Contains(string(body), `<script type="module" src="app.js">`) {
				t.Errorf("GET /console/ is not the console's page: %.200s", body)
			}
		})
	}
}
