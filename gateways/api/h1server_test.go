package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawReply is what a server answered to raw request bytes.
type rawReply struct {
	status int
	header http.Header
	body   string
	// closed: the server closed the connection after the answer.
	closed bool
}

// rawExchange writes raw to addr and reads the answers to n requests
// (HEAD when head is set), then whether the connection stays open.
func rawExchange(t *testing.T, addr, raw string, n int, head bool) []rawReply {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	method := "GET"
	if head {
		method = "HEAD"
	}
	var out []rawReply
	for i := 0; i < n; i++ {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("answer %d body: %v", i+1, err)
		}
		out = append(out, rawReply{status: resp.StatusCode, header: resp.Header, body: string(b)})
	}
	// A closed connection reads EOF at once; an open one times out.
	conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = br.ReadByte()
	out[len(out)-1].closed = err == io.EOF
	return out
}

// bothServers runs the API under each HTTP server, so that the lean one
// can be held to what net/http answers.
func bothServers(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, name := range []string{HTTPServerLean, HTTPServerNetHTTP} {
		t.Run(strings.ReplaceAll(name, "/", ""), func(t *testing.T) {
			e := newEnv(t, envOptions{api: func(c *Config) { c.HTTPServer = name }})
			fn(t, e)
		})
	}
}

func TestH1ProtocolAnswers(t *testing.T) {
	long := strings.Repeat("a", 1<<20+8192)
	for name, tc := range map[string]struct {
		raw        string
		n          int
		head       bool
		wantStatus []int
		wantClosed bool
		wantBody   string // prefix of the last answer's body
	}{
		"keep-alive":     {raw: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", wantStatus: []int{200}},
		"pipelined":      {raw: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /readyz HTTP/1.1\r\nHost: x\r\n\r\n", n: 2, wantStatus: []int{200, 200}},
		"close":          {raw: "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", wantStatus: []int{200}, wantClosed: true},
		"http/1.0":       {raw: "GET /healthz HTTP/1.0\r\n\r\n", wantStatus: []int{200}, wantClosed: true},
		"http/1.0 alive": {raw: "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", wantStatus: []int{200}},
		"head":           {raw: "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n", head: true, wantStatus: []int{200}},
		"options *":      {raw: "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", wantStatus: []int{200}},
		"no host":        {raw: "GET /healthz HTTP/1.1\r\n\r\n", wantStatus: []int{400}, wantClosed: true, wantBody: "400 Bad Request: missing required Host header"},
		"bad host":       {raw: "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", wantStatus: []int{400}, wantClosed: true},
		"garbage":        {raw: "GARBAGE\r\n\r\n", wantStatus: []int{400}, wantClosed: true},
		"bad header":     {raw: "GET /healthz HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", wantStatus: []int{400}, wantClosed: true},
		"header ctl":     {raw: "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", wantStatus: []int{400}, wantClosed: true},
		"huge header":    {raw: "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + long + "\r\n\r\n", wantStatus: []int{431}, wantClosed: true},
		"http/2":         {raw: "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", wantStatus: []int{505}, wantClosed: true},
		"bad te":         {raw: "POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", wantStatus: []int{501}, wantClosed: true},
		"bad length":     {raw: "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: x\r\n\r\n", wantStatus: []int{400}, wantClosed: true},
		"expect other":   {raw: "POST /healthz HTTP/1.1\r\nHost: x\r\nExpect: fast\r\nContent-Length: 1\r\n\r\nx", wantStatus: []int{417}, wantClosed: true},
		"unknown route":  {raw: "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", wantStatus: []int{404}},
		"wrong method":   {raw: "PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", wantStatus: []int{405}},
		"unauthenticated append": {
			raw:        "POST " + eventsPath("acme", "logs") + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Length: 3\r\n\r\nabc",
			wantStatus: []int{401},
		},
	} {
		t.Run(name, func(t *testing.T) {
			bothServers(t, func(t *testing.T, e *env) {
				n := max(tc.n, 1)
				got := rawExchange(t, strings.TrimPrefix(e.ts.URL, "http://"), tc.raw, n, tc.head)
				for i, r := range got {
					if r.status != tc.wantStatus[i] {
						t.Errorf("answer %d: status %d, want %d (%q)", i+1, r.status, tc.wantStatus[i], r.body)
					}
				}
				last := got[len(got)-1]
				if last.closed != tc.wantClosed {
					t.Errorf("connection closed = %v, want %v", last.closed, tc.wantClosed)
				}
				if !strings.HasPrefix(last.body, tc.wantBody) {
					t.Errorf("body %q, want prefix %q", last.body, tc.wantBody)
				}
				if tc.head && last.body != "" {
					t.Errorf("HEAD answer has a body: %q", last.body)
				}
			})
		})
	}
}

func TestH1AppendBodies(t *testing.T) {
	bothServers(t, func(t *testing.T, e *env) {
		e.mkStream("acme", "logs", "lines", 1)
		addr := strings.TrimPrefix(e.ts.URL, "http://")
		auth := "Authorization: Bearer " + e.root + "\r\n"
		path := eventsPath("acme", "logs")
		for name, tc := range map[string]struct {
			raw        string
			wantStatus int
			wantClosed bool
		}{
			"chunked":     {raw: "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n4\r\na\nb\n\r\n0\r\n\r\n", wantStatus: 200},
			"bad chunk":   {raw: "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n", wantStatus: 400, wantClosed: true},
			"too large":   {raw: "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 5000000\r\n\r\n", wantStatus: 413, wantClosed: true},
			"empty":       {raw: "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 0\r\n\r\n", wantStatus: 400},
			"with stray":  {raw: "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 1\r\n\r\nx\r\n", wantStatus: 200},
			"post then 1": {raw: "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Length: 1\r\nConnection: close\r\n\r\nx", wantStatus: 200, wantClosed: true},
		} {
			t.Run(name, func(t *testing.T) {
				got := rawExchange(t, addr, tc.raw, 1, false)[0]
				if got.status != tc.wantStatus {
					t.Errorf("status %d, want %d (%q)", got.status, tc.wantStatus, got.body)
				}
				if got.closed != tc.wantClosed {
					t.Errorf("connection closed = %v, want %v", got.closed, tc.wantClosed)
				}
			})
		}
	})
}

// A client that sends Expect: 100-continue waits for the go-ahead before
// its body; without it the append would never arrive.
func TestH1ExpectContinue(t *testing.T) {
	bothServers(t, func(t *testing.T, e *env) {
		e.mkStream("acme", "logs", "lines", 1)
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.ts.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, "POST "+eventsPath("acme", "logs")+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+e.root+"\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
		br := bufio.NewReader(conn)
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
			t.Fatalf("before the body: %q %v", line, err)
		}
		if _, err := br.ReadString('\n'); err != nil { // the blank line
			t.Fatal(err)
		}
		io.WriteString(conn, "hello")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"count":1`) {
			t.Fatalf("append after 100 Continue: %d %s", resp.StatusCode, b)
		}
	})
}

// A client that waits for 100 Continue is refused with 401 before its
// body is sent. The lean server then closes the connection at once:
// the unsent body must not be read as the next request, nor waited for.
// (net/http waits for the body.)
func TestH1ExpectContinueRefused(t *testing.T) {
	bothServers(t, func(t *testing.T, e *env) {
		got := rawExchange(t, strings.TrimPrefix(e.ts.URL, "http://"),
			"POST "+eventsPath("acme", "logs")+" HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nAuthorization: Bearer nope\r\nContent-Length: 5\r\n\r\n", 1, false)[0]
		if got.status != http.StatusUnauthorized {
			t.Fatalf("status %d", got.status)
		}
		if e.srv.cfg.HTTPServer == HTTPServerLean && !got.closed {
			t.Fatal("connection left open")
		}
	})
}

func TestH1Timeouts(t *testing.T) {
	for _, name := range []string{HTTPServerLean, HTTPServerNetHTTP} {
		t.Run(strings.ReplaceAll(name, "/", ""), func(t *testing.T) {
			e := newEnv(t, envOptions{api: func(c *Config) {
				c.HTTPServer = name
				c.ReadTimeout = 200 * time.Millisecond
				c.IdleTimeout = 200 * time.Millisecond
			}})
			addr := strings.TrimPrefix(e.ts.URL, "http://")
			for what, raw := range map[string]string{
				"idle":            "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
				"partial headers": "GET /healthz HTTP/1.1\r\nHost: x\r\n",
			} {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(conn, raw)
				// The client's deadline only stops a server that never
				// closes: what is checked is who ended the connection.
				conn.SetReadDeadline(time.Now().Add(time.Minute))
				_, err = io.Copy(io.Discard, conn) // until the server closes
				if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
					t.Errorf("%s: connection not closed by the server: %v", what, err)
				}
				conn.Close()
			}
		})
	}
}

// A follow whose client goes away ends, rather than holding its
// goroutine until the server shuts down.
func TestH1FollowEndsWhenClientLeaves(t *testing.T) {
	bothServers(t, func(t *testing.T, e *env) {
		e.mkStream("acme", "logs", "lines", 1)
		ctx, cancel := context.WithCancel(t.Context())
		hr, _ := http.NewRequestWithContext(ctx, "GET", e.ts.URL+eventsPath("acme", "logs")+"?follow=true", nil)
		hr.Header.Set("Authorization", "Bearer "+e.root)
		resp, err := e.ts.Client().Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil { // the start cursor
			t.Fatal(err)
		}
		cancel()
		resp.Body.Close()
		deadline := time.Now().Add(hangStop)
		route := "GET /v1/tenants/{tenant}/streams/{stream}/events"
		for e.series("silt_head_requests_total", "head", "api", "op", route, "status", "ok") < 1 {
			if time.Now().After(deadline) {
				t.Fatal("the follow did not end after its client left")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func TestH1TLS(t *testing.T) {
	// Borrow httptest's certificate and a client that trusts it.
	hts := httptest.NewUnstartedServer(http.NotFoundHandler())
	hts.StartTLS()
	tlsCfg, client := hts.TLS.Clone(), hts.Client()
	hts.Close()
	defer client.CloseIdleConnections()
	// Offered h2 is dropped for this server only.
	tlsCfg.NextProtos = []string{"h2", "http/1.1"}
	defer func() {
		if !slices.Equal(tlsCfg.NextProtos, []string{"h2", "http/1.1"}) {
			t.Errorf("Serve changed the caller's NextProtos to %q", tlsCfg.NextProtos)
		}
	}()

	e := newEnv(t, envOptions{noServer: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ctx, ln, tlsCfg) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	addr := ln.Addr().String()

	resp, err := client.Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil || resp.ProtoMajor != 1 {
		t.Fatalf("over TLS: %d %v %s", resp.StatusCode, resp.TLS != nil, resp.Proto)
	}

	// Plain HTTP to the TLS port gets net/http's hint.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	b, _ := io.ReadAll(conn)
	if !strings.Contains(string(b), "400 Bad Request") || !strings.Contains(string(b), "HTTPS server") {
		t.Fatalf("plain HTTP to the TLS port: %q", b)
	}
}

// FuzzH1Request feeds arbitrary bytes to the lean server: it must never
// panic, and must answer either nothing or a well-formed response that is
// never a 5xx other than 501 and 505 (protocol refusals).
func FuzzH1Request(f *testing.F) {
	for _, s := range []string{
		"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/tenants HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
		"POST /v1/tenants/a/streams/b/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
		"GET / HTTP/1.0\r\n\r\n",
		"HEAD /metrics HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	e := newEnv(f, envOptions{noServer: true})
	srv := newH1Server(e.srv.Handler(), e.srv.cfg, e.srv.log, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.serve(ln) }()
	f.Cleanup(func() {
		srv.beginClose()
		ln.Close()
		<-served
		srv.shutdown(time.Second)
	})
	f.Fuzz(func(t *testing.T, raw []byte) {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		conn.Write(raw)
		// The server answers what it can parse, then sees the end.
		conn.(*net.TCPConn).CloseWrite()
		br := bufio.NewReader(conn)
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode >= 500 && resp.StatusCode != 501 && resp.StatusCode != 505 && resp.StatusCode != 503 {
				t.Fatalf("status %d for %q", resp.StatusCode, raw)
			}
		}
	})
}

// The hand-built append answer must be byte for byte what encoding/json
// would write.
func TestWriteAppendJSONMatchesEncoder(t *testing.T) {
	for _, a := range []appendJSON{
		{Segment: "0", FirstOffset: 0, Count: 1},
		{Segment: "seg-7.b_x", FirstOffset: 1<<64 - 1, Count: 1 << 20, Duplicate: true},
		{Segment: `a"b\c`, Count: 2},
		{Segment: "é\u2028<&>", Count: 3},
		{Segment: "", Count: 0},
	} {
		want, got := httptest.NewRecorder(), httptest.NewRecorder()
		writeJSON(want, http.StatusOK, a)
		writeAppendJSON(got, a)
		if got.Body.String() != want.Body.String() || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") || got.Code != want.Code {
			t.Errorf("%+v: got %d %q, want %d %q", a, got.Code, got.Body, want.Code, want.Body)
		}
	}
}

// BenchmarkAppendOverHTTP is one synchronous producer appending 1 KiB
// events through each HTTP server over loopback, with a client that
// allocates next to nothing, so that allocs/op is mostly the server's.
func BenchmarkAppendOverHTTP(b *testing.B) {
	for _, name := range []string{HTTPServerLean, HTTPServerNetHTTP} {
		b.Run(strings.ReplaceAll(name, "/", ""), func(b *testing.B) {
			e := newEnv(b, envOptions{api: func(c *Config) { c.HTTPServer = name }})
			e.mkStream("acme", "logs", "framed", 1)
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.ts.URL, "http://"))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			body := append([]byte{0, 0, 4, 0}, make([]byte, 1024)...)
			raw := []byte("POST " + eventsPath("acme", "logs") + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + e.root +
				"\r\nContent-Type: " + contentFramed + "\r\nContent-Length: 1028\r\n\r\n" + string(body))
			br := bufio.NewReader(conn)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conn.Write(raw); err != nil {
					b.Fatal(err)
				}
				if err := readStatusOK(br); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// readStatusOK reads one answer with a Content-Length body and checks it
// is a 200.
func readStatusOK(br *bufio.Reader) error {
	n := -1
	for first := true; ; first = false {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if first && !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
			return fmt.Errorf("answer: %q", line)
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
		if len(line) == 2 {
			break
		}
	}
	_, err := br.Discard(n)
	return err
}

// A request cut off inside its headers gets net/http's 400.
func TestH1TruncatedRequest(t *testing.T) {
	bothServers(t, func(t *testing.T, e *env) {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.ts.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
		conn.(*net.TCPConn).CloseWrite()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}
