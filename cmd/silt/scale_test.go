package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/client"
)

// The scale test's shape: streams spread over scaleTenants tenants, each
// with two segments holding scaleEvents events each, in a server limited
// to scaleNofile descriptors.
const (
	scaleTenants   = 10
	scaleEvents    = 2
	scaleNofile    = 4096
	scaleWorkers   = 16 // concurrent requests: enough to keep 2 cores busy
	scaleSample    = 12 // streams read back through every head
	scaleDefaultN  = 20000
	scaleStreamEnv = "SILT_SCALE_STREAMS"
	// scaleHang ends a request that never answers (a server out of
	// descriptors once held appends forever): a failure that names the
	// stream instead of go test's timeout. It bounds no measurement.
	scaleHang = 2 * time.Minute
)

// scaleStreams is how many streams the test creates: 20,000, or what
// SILT_SCALE_STREAMS asks for (the long run, `make test-scale`, asks for
// 100,000).
func scaleStreams(t *testing.T) int {
	v := os.Getenv(scaleStreamEnv)
	if v == "" {
		return scaleDefaultN
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < scaleSample {
		t.Fatalf("%s=%q: want a number of streams of at least %d", scaleStreamEnv, v, scaleSample)
	}
	return n
}

// scaleStream is stream i: its tenant, name and (once created) segments.
type scaleStream struct {
	tenant, name string
	segments     []string
}

func (s scaleStream) path() string { return s.tenant + "/" + s.name }

// events are what segment j of the stream holds: scaleEvents lines that
// name their stream, segment and position, so a misplaced event shows.
func (s scaleStream) events(j int) [][]byte {
	out := make([][]byte, scaleEvents)
	for k := range out {
		out[k] = fmt.Appendf(nil, "%s/%s seg %d event %d", s.tenant, s.name, j, k)
	}
	return out
}

// tier2Bytes is segment j as the file heads serve it: the events as lines.
func (s scaleStream) tier2Bytes(j int) []byte {
	var b bytes.Buffer
	for _, ev := range s.events(j) {
		b.Write(ev)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// TestScale is the many-streams test: a server limited to 4,096
// descriptors is given 20,000 streams (100,000 with
// SILT_SCALE_STREAMS=100000) of two segments each, spread over ten
// tenants. Every create must succeed (a 503 with Retry-After is retried;
// any other refusal fails the test); every segment gets one batch with a
// writer id; a sample is read back through the native API, S3, NFS and
// WebHDFS once tiering has put it in tier 2; the server is killed with
// SIGKILL and restarted; every acknowledged event must then be there, once,
// and a repeated batch must be answered as a duplicate. The server's
// descriptors are sampled from /proc throughout: the files among them
// must stay inside the reserve the connection caps leave
// (docs/connections.md), and no "too many open files" may be logged.
//
// Before lazy segments and the node-wide log, each stream held four
// descriptors for its life, and creation answered 500 after about 900
// streams at this limit.
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: creates 20,000 streams in a server child, a few minutes on 2 cores; make go-test runs it")
	}
	n := scaleStreams(t)
	began := time.Now()
	srv := newScaleServer(t, scaleNofile)
	srv.start()
	ctx := context.Background()
	cl, err := client.New("http://"+srv.api, client.WithToken(srv.token))
	if err != nil {
		t.Fatal(err)
	}
	var peak fdPeak
	phase := func(name string, start time.Time, count int) {
		t.Helper()
		srv.alive()
		took := time.Since(start)
		t.Logf("%-28s %7d in %8s (%6.0f/s); server holds %d descriptors", name, count, took.Round(time.Millisecond),
			float64(count)/took.Seconds(), srv.fds.current())
	}

	for i := range scaleTenants {
		if _, err := cl.CreateTenant(ctx, fmt.Sprintf("scale-%02d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	streams := make([]scaleStream, n)
	for i := range streams {
		streams[i] = scaleStream{tenant: fmt.Sprintf("scale-%02d", i%scaleTenants), name: fmt.Sprintf("s%06d", i)}
	}

	// Create.
	start := time.Now()
	creator := &streamCreator{api: "http://" + srv.api, token: srv.token, hc: &http.Client{Timeout: time.Minute}}
	done, err := parallel(ctx, n, func(i int) error {
		segs, err := creator.create(ctx, streams[i])
		streams[i].segments = segs
		return err
	})
	if err != nil {
		t.Fatalf("create: %v\n%d of %d streams created; the server holds %d descriptors of %d; %d lines of its log say too many open files",
			err, done, n, srv.fds.current(), scaleNofile, srv.log.emfileLines())
	}
	phase("create streams", start, n)
	t.Logf("creation: %d answers 503 with Retry-After, retried", creator.retried.Load())

	// Append: one batch per segment, with a writer id.
	start = time.Now()
	var dup atomic.Int64
	done, err = parallel(ctx, n*2, func(i int) error {
		s, j := streams[i/2], i%2
		res, err := appendRetrying(ctx, cl, s, j)
		if err != nil {
			return err
		}
		if res.Duplicate {
			dup.Add(1)
		}
		if res.Segment != s.segments[j] || res.FirstOffset != 0 || res.Count != scaleEvents {
			return fmt.Errorf("append to %s segment %s: acknowledged as %+v, want offsets 0..%d of that segment", s.path(), s.segments[j], res, scaleEvents-1)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("append: %v\n%d of %d batches acknowledged; the server holds %d descriptors", err, done, n*2, srv.fds.current())
	}
	if dup.Load() != 0 {
		t.Fatalf("%d first batches were answered as duplicates", dup.Load())
	}
	phase("append batches", start, n*2)

	sample := make([]scaleStream, scaleSample)
	for k := range sample {
		sample[k] = streams[k*(n-1)/(scaleSample-1)]
	}
	start = time.Now()
	waitSampleTiered(t, ctx, cl, sample)
	phase("sample in tier 2", start, len(sample))
	start = time.Now()
	readHeads(t, ctx, srv, sample, "before the restart")
	phase("sample through the heads", start, len(sample)*2*3)

	// kill -9 and restart.
	peak = peak.merge(srv.kill())
	took := srv.start()
	// The pooled connections were to the killed process.
	cl.CloseIdleConnections()
	t.Logf("%-28s %7d in %8s; server holds %d descriptors", "restart after kill -9", n, took.Round(time.Millisecond), srv.fds.current())

	// Every acknowledged event is there, once.
	start = time.Now()
	done, err = parallel(ctx, n*2, func(i int) error {
		return readSegment(ctx, cl, streams[i/2], i%2)
	})
	if err != nil {
		t.Fatalf("read back: %v\n%d of %d segments checked", err, done, n*2)
	}
	phase("read back every segment", start, n*2)
	for _, s := range sample {
		for j := range s.segments {
			res, err := appendRetrying(ctx, cl, s, j)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Duplicate || res.FirstOffset != 0 || res.Count != scaleEvents {
				t.Errorf("%s segment %s: the first batch sent again was answered %+v, want a duplicate of offsets 0..%d", s.path(), s.segments[j], res, scaleEvents-1)
			}
		}
	}
	readHeads(t, ctx, srv, sample, "after the restart")

	peak = peak.merge(srv.stop())
	t.Logf("whole run: %s in %s", peak, time.Since(began).Round(time.Second))
	if budget := scaleReserve(scaleNofile); peak.nonSock > budget {
		t.Errorf("the server held %d descriptors that are not client connections, over the %d that the connection caps leave at a limit of %d (docs/connections.md): %s",
			peak.nonSock, budget, scaleNofile, peak)
	}
	if n := srv.log.emfileLines(); n > 0 {
		t.Errorf("%d lines of the server's log say too many open files; the first of its log:\n%s", n, srv.log)
	}
}

// parallel runs fn(0) … fn(n-1) on scaleWorkers goroutines and stops at
// the first error; it returns how many calls succeeded and that error.
func parallel(ctx context.Context, n int, fn func(i int) error) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next, ok atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range scaleWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err; cancel() })
					return
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(ok.Load()), first
}

// streamCreator creates streams over the native API with plain HTTP, so
// that it sees each answer's status and Retry-After as a client does.
type streamCreator struct {
	api, token string
	hc         *http.Client
	retried    atomic.Int64
}

func (c *streamCreator) do(ctx context.Context, method, path string, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.api+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// create creates s with two segments and returns their ids. A 503 must
// carry Retry-After and is retried after it; a 409 after such a retry
// means the refused attempt was stored after all, which is fine only if
// the stream is whole. Anything else fails.
func (c *streamCreator) create(ctx context.Context, s scaleStream) ([]string, error) {
	path := "/v1/tenants/" + s.tenant + "/streams"
	body := fmt.Appendf(nil, `{"name":%q,"segments":2}`, s.name)
	retried := false
	for attempt := 1; ; attempt++ {
		status, hdr, b, err := c.do(ctx, "POST", path, body)
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", s.path(), err)
		}
		switch {
		case status == http.StatusCreated:
			if ids, err := segmentIDs(s, b); err == nil || !errors.Is(err, errNoSegments) {
				return ids, err
			}
			// The answer may leave out live segment state; the
			// description has it.
			status, _, b, err := c.do(ctx, "GET", path+"/"+s.name, nil)
			if err != nil || status != http.StatusOK {
				return nil, fmt.Errorf("create %s: created, then the stream answers %d %s (%v)", s.path(), status, b, err)
			}
			return segmentIDs(s, b)
		case status == http.StatusServiceUnavailable && attempt < 60:
			wait, err := strconv.Atoi(hdr.Get("Retry-After"))
			if err != nil || wait < 0 {
				return nil, fmt.Errorf("create %s: 503 without a usable Retry-After (%q): %s", s.path(), hdr.Get("Retry-After"), b)
			}
			c.retried.Add(1)
			retried = true
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(max(wait, 1)) * time.Second):
			}
		case status == http.StatusConflict && retried:
			status, _, b, err := c.do(ctx, "GET", path+"/"+s.name, nil)
			if err != nil || status != http.StatusOK {
				return nil, fmt.Errorf("create %s: 409 after a 503, then the stream answers %d %s (%v)", s.path(), status, b, err)
			}
			return segmentIDs(s, b)
		default:
			return nil, fmt.Errorf("create %s: %d %s", s.path(), status, bytes.TrimSpace(b))
		}
	}
}

var errNoSegments = errors.New("the answer lists no segments")

// segmentIDs reads a stream's segment ids from its description, which
// must show the two segments asked for.
func segmentIDs(s scaleStream, desc []byte) ([]string, error) {
	var st client.Stream
	if err := json.Unmarshal(desc, &st); err != nil {
		return nil, fmt.Errorf("create %s: %w: %s", s.path(), err, desc)
	}
	if st.Config.Segments == 2 && len(st.Segments) == 0 {
		return nil, fmt.Errorf("create %s: %w", s.path(), errNoSegments)
	}
	if st.Config.Segments != 2 || len(st.Segments) != 2 {
		return nil, fmt.Errorf("create %s: the stream has %d segments (config %d), want 2: %s", s.path(), len(st.Segments), st.Config.Segments, desc)
	}
	return []string{st.Segments[0].ID, st.Segments[1].ID}, nil
}

// appendRetrying sends segment j's batch with the stream's writer id and
// sequence number 1. The SDK retries it (it carries a writer id); a 503
// that outlasts those retries is retried here, as an application would.
func appendRetrying(ctx context.Context, cl *client.Client, s scaleStream, j int) (client.AppendResult, error) {
	opts := client.AppendOptions{Segment: s.segments[j], WriterID: "w-" + s.name, Seq: 1}
	for attempt := 1; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, scaleHang)
		res, err := cl.Append(rctx, s.tenant, s.name, s.events(j), opts)
		cancel()
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable && attempt < 30 {
			time.Sleep(time.Second)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("append to %s segment %s: %w", s.path(), s.segments[j], err)
		}
		return res, nil
	}
}

// readSegment checks that segment j holds exactly its batch.
func readSegment(ctx context.Context, cl *client.Client, s scaleStream, j int) error {
	ctx, cancel := context.WithTimeout(ctx, scaleHang)
	defer cancel()
	b, err := cl.Read(ctx, s.tenant, s.name, client.ReadOptions{Segment: s.segments[j], Max: 100})
	if err != nil {
		return fmt.Errorf("read %s segment %s: %w", s.path(), s.segments[j], err)
	}
	want := s.events(j)
	var got []string
	for _, ev := range b.Events {
		got = append(got, fmt.Sprintf("%d:%s", ev.Offset, ev.Data))
	}
	if len(b.Events) != len(want) {
		return fmt.Errorf("%s segment %s holds %d events, %d were acknowledged: %q", s.path(), s.segments[j], len(b.Events), len(want), got)
	}
	for k, ev := range b.Events {
		if ev.Segment != s.segments[j] || ev.Offset != uint64(k) || !bytes.Equal(ev.Data, want[k]) {
			return fmt.Errorf("%s segment %s holds %q, want %q at offsets 0..%d", s.path(), s.segments[j], got, want, len(want)-1)
		}
	}
	return nil
}

// waitSampleTiered waits until tiering status shows every sample segment
// whole in tier 2. Tiering has every other stream to do meanwhile; the
// bound only stops a hang.
func waitSampleTiered(t *testing.T, ctx context.Context, cl *client.Client, sample []scaleStream) {
	t.Helper()
	var last string
	for _, s := range sample {
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
			st, err := cl.GetStream(ctx, s.tenant, s.name)
			if err == nil && tieredAll(st) {
				break
			}
			if err != nil {
				last = err.Error()
			} else {
				b, _ := json.Marshal(st.Tiering)
				last = string(b)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not reach tier 2 within 10 minutes; its tiering status: %s", s.path(), last)
			}
		}
	}
}

func tieredAll(st client.Stream) bool {
	if st.Tiering == nil || len(st.Tiering.Segments) != len(st.Segments) {
		return false
	}
	for _, sg := range st.Tiering.Segments {
		if sg.TieredOffset != scaleEvents {
			return false
		}
	}
	return true
}

// readHeads reads every sample segment through the native API, S3, NFS and
// WebHDFS and compares each with what was acknowledged.
func readHeads(t *testing.T, ctx context.Context, srv *scaleServer, sample []scaleStream, when string) {
	t.Helper()
	s3r, err := srv.s3Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nfsr, unmount, err := srv.nfsReader()
	if err != nil {
		t.Fatalf("nfs %s: %v", when, err)
	}
	defer unmount()
	heads := []struct {
		name string
		read segmentReader
	}{{"s3", s3r}, {"nfs", nfsr}, {"webhdfs", srv.webhdfsReader()}}
	cl, err := client.New("http://"+srv.api, client.WithToken(srv.token))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sample {
		for j := range s.segments {
			if err := readSegment(ctx, cl, s, j); err != nil {
				t.Errorf("native %s: %v", when, err)
			}
			want := s.tier2Bytes(j)
			for _, h := range heads {
				got, err := h.read(ctx, s.tenant, s.name, s.segments[j])
				if err != nil {
					t.Errorf("%s %s: %s segment %s: %v", h.name, when, s.path(), s.segments[j], err)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s %s: %s segment %s reads %q, want %q", h.name, when, s.path(), s.segments[j], got, want)
				}
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}
