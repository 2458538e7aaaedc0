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
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/silt-io/silt/internal/etcdtest"
	"github.com/silt-io/silt/internal/mototest"
)

// The tests of durability cluster run silt serve as child processes on a
// real etcd and a real S3 server (moto): a serving node and a standby, each
// on its own empty data directory, sharing only etcd, the bucket, the
// secrets key and the root token.

var walPad = strings.Repeat("x", 400)

const walTestToken = "wal-test-root-token-0123456789abcdef0123456789"

type walCluster struct {
	etcd    *etcdtest.Server
	moto    *mototest.Server
	keyFile string
}

func newWALCluster(t *testing.T) *walCluster {
	t.Helper()
	etcd := etcdtest.Start(t)
	moto := mototest.Start(t)
	if err := moto.CreateBucket("tier2"); err != nil {
		t.Fatal(err)
	}
	return &walCluster{etcd: etcd, moto: moto, keyFile: filepath.Join(t.TempDir(), "secrets.key")}
}

// args are a node's flags: cluster on etcd, tier 2 on moto, quick leases
// and tiering (so that some data is in tier 2 before a takeover).
func (c *walCluster) args(extra ...string) []string {
	return append([]string{
		"--cluster.etcd.endpoints", c.etcd.Endpoint,
		"--cluster.etcd.lock_ttl", "2s", "--cluster.lease_ttl", "1s",
		"--cluster.etcd.request_timeout", "2s",
		"--tiering.backend", "s3", "--tiering.s3.endpoint", c.moto.Endpoint, "--tiering.s3.bucket", "tier2",
		"--tiering.s3.path_style", "--tiering.s3.region", mototest.Region,
		"--tiering.s3.access_key_id", mototest.AccessKeyID, "--tiering.s3.secret_access_key", mototest.SecretAccessKey,
		"--tiering.max_lag", "1s", "--tiering.interval", "200ms",
		// Checkpoints during the test: the log must still hold whatever
		// tier 2 does not.
		"--core.wal.checkpoint_interval", "1s",
		"--auth.root_token", walTestToken, "--auth.secrets_key_file", c.keyFile,
		"--log.level", "info",
	}, extra...)
}

// waitCheckpointMoved waits until a node's write-ahead checkpoint starts
// above 0, and returns where (a hang stop bounds the wait).
func (c *walCluster) waitCheckpointMoved(t *testing.T) uint64 {
	t.Helper()
	cli := c.etcd.Client(t)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := cli.Get(context.Background(), "/silt/wal/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range resp.Kvs {
			if !strings.HasSuffix(string(kv.Key), "/checkpoint") || len(kv.Value) == 0 || kv.Value[0] != 0 {
				continue
			}
			var cp struct {
				From uint64 `json:"from"`
			}
			if json.Unmarshal(kv.Value[1:], &cp) == nil && cp.From > 0 {
				return cp.From
			}
		}
	}
	t.Fatal("no write-ahead checkpoint moved past 0 within a minute")
	return 0
}

// startNode starts silt serve in a fresh directory without waiting for it
// (a standby is not ready until it takes over).
func (c *walCluster) startNode(t *testing.T, extra ...string) *siltServer {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	s := &siltServer{dir: dir, api: "http://" + addr, rootToken: walTestToken, log: &bytes.Buffer{}}
	s.cmd = exec.Command(siltBinary(t), serveArgs(addr, c.args(extra...)...)...)
	s.cmd.Env = cleanEnv()
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = syncWriter(s.log), syncWriter(s.log)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Signal(syscall.SIGCONT)
			s.cmd.Process.Signal(os.Interrupt)
			s.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("node %s output:\n%s", s.api, s.logText())
		}
	})
	return s
}

var logMu sync.Mutex

type lockedWriter struct{ b *bytes.Buffer }

func (w lockedWriter) Write(p []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	return w.b.Write(p)
}

func syncWriter(b *bytes.Buffer) io.Writer { return lockedWriter{b} }

func (s *siltServer) logText() string {
	logMu.Lock()
	defer logMu.Unlock()
	return s.log.String()
}

// waitReady waits until s answers /readyz 200; the bound is a hang stop.
func waitReady(t *testing.T, s *siltServer) {
	t.Helper()
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(s.api + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("silt serve %s did not become ready; its output:\n%s", s.api, s.logText())
		}
	}
}

// ack is one acknowledged batch.
type walAck struct {
	node   string
	first  uint64
	events []string
}

type appendAnswer struct {
	Segment     string `json:"segment"`
	FirstOffset uint64 `json:"first_offset"`
	Count       int    `json:"count"`
	Duplicate   bool   `json:"duplicate"`
}

// appendBatch sends one idempotent batch to api; status 0 is a transport
// error (refused, reset, the process gone).
func appendBatch(ctx context.Context, api, writer string, seq uint64, events []string) (int, appendAnswer, error) {
	req, _ := http.NewRequestWithContext(ctx, "POST", api+"/v1/tenants/acme/streams/s/events",
		strings.NewReader(strings.Join(events, "\n")+"\n"))
	req.Header.Set("Authorization", "Bearer "+walTestToken)
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Silt-Writer-Id", writer)
	req.Header.Set("Silt-Seq", fmt.Sprint(seq))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, appendAnswer{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var a appendAnswer
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &a); err != nil {
			return resp.StatusCode, a, fmt.Errorf("decode %s: %w", body, err)
		}
	}
	return resp.StatusCode, a, nil
}

// walProducers append from n idempotent writers, each batch retried with the
// same writer id and sequence number on whichever node answers, until
// stop is closed (a batch in flight is finished first).
type walProducers struct {
	mu    sync.Mutex
	acks  []walAck
	codes map[int]int // answers other than 200, by status (0: transport)
	wg    sync.WaitGroup
	stop  chan struct{}
}

func startWALProducers(n int, nodes func() []string) *walProducers {
	p := &walProducers{codes: map[int]int{}, stop: make(chan struct{})}
	for g := range n {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			writer := fmt.Sprintf("w%d", g)
			cur := 0 // the node that answered last is tried first
			for seq := uint64(1); ; seq++ {
				select {
				case <-p.stop:
					return
				default:
				}
				// Padded, so that the log passes its checkpoint spacing
				// within the test.
				evs := []string{fmt.Sprintf("w%d-%d-a-%s", g, seq, walPad), fmt.Sprintf("w%d-%d-b-%s", g, seq, walPad)}
				for ; ; cur++ {
					ns := nodes()
					api := ns[cur%len(ns)]
					// A stopped node holds a request: the producer tries
					// the other one after a while.
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					code, a, err := appendBatch(ctx, api, writer, seq, evs)
					cancel()
					if code == http.StatusOK && err == nil {
						p.mu.Lock()
						p.acks = append(p.acks, walAck{node: api, first: a.FirstOffset, events: evs})
						p.mu.Unlock()
						break
					}
					p.mu.Lock()
					p.codes[code]++
					p.mu.Unlock()
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	return p
}

func (p *walProducers) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acks)
}

// waitAcks waits until the walProducers have n acknowledgements since the
// call (a hang stop bounds it).
func (p *walProducers) waitAcks(t *testing.T, n int) {
	t.Helper()
	want := p.count() + n
	for deadline := time.Now().Add(90 * time.Second); p.count() < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("walProducers stuck at %d acknowledgements (want %d); non-200 answers: %v", p.count(), want, p.codes)
		}
	}
}

// snapshot returns the acknowledgements so far.
func (p *walProducers) snapshot() []walAck {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]walAck(nil), p.acks...)
}

func (p *walProducers) finish() []walAck {
	close(p.stop)
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acks
}

// readAll reads segment 0 of acme/s from offset 0 on, as raw lines; tier 2
// serves what tier 1 no longer holds.
func readAllWAL(t *testing.T, api string) []string {
	t.Helper()
	var out []string
	for {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/v1/tenants/acme/streams/s/events?segment=0&from=%d&format=raw&max=10000", api, len(out)), nil)
		req.Header.Set("Authorization", "Bearer "+walTestToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("read from %d: %d %s", len(out), resp.StatusCode, body)
		}
		s := strings.TrimSuffix(string(body), "\n")
		if s == "" {
			return out
		}
		out = append(out, strings.Split(s, "\n")...)
	}
}

// checkServed checks what api serves against the acknowledgements: every
// acknowledged event at its acknowledged offset, no event twice, and each
// writer's batches in the order it sent them.
func checkServed(t *testing.T, api string, acks []walAck) []string {
	t.Helper()
	lines := readAllWAL(t, api)
	seen := map[string]int{}
	for i, l := range lines {
		if j, dup := seen[l]; dup {
			t.Fatalf("event %q served twice, at offsets %d and %d", l, j, i)
		}
		seen[l] = i
	}
	for _, a := range acks {
		for i, e := range a.events {
			off := a.first + uint64(i)
			if off >= uint64(len(lines)) || lines[off] != e {
				got := "(beyond the end)"
				if off < uint64(len(lines)) {
					got = lines[off]
				}
				t.Fatalf("acknowledged event %q (by %s) at offset %d: served %s; %d events served", e, a.node, off, got, len(lines))
			}
		}
	}
	// Per writer, sequence numbers ascend with the offsets.
	last := map[string]int{}
	for _, l := range lines {
		var w string
		var seq int
		var part string
		if _, err := fmt.Sscanf(strings.ReplaceAll(l, "-", " "), "%s %d %s", &w, &seq, &part); err != nil {
			t.Fatalf("unexpected event %q", l)
		}
		if seq < last[w] {
			t.Fatalf("writer %s: batch %d served after batch %d", w, seq, last[w])
		}
		last[w] = seq
	}
	return lines
}

func createStream(t *testing.T, s *siltServer) {
	t.Helper()
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/s")
}

// TestClusterWALTakeoverKill9: the serving node is killed with SIGKILL
// while 4 idempotent walProducers append; a standby on its own empty data
// directory takes the serving lock, adopts the dead node's write-ahead
// log (fencing it), and serves every acknowledged event once, at its
// acknowledged offset, and the offsets go on from there.
func TestClusterWALTakeoverKill9(t *testing.T) {
	c := newWALCluster(t)
	// Rounds wait a little for more appends (one PUT for more of them).
	linger := []string{"--cluster.wal.flush_interval", "2ms", "--cluster.wal.flush_bytes", "65536"}
	a := c.startNode(t, linger...)
	waitReady(t, a)
	createStream(t, a)
	b := c.startNode(t, append(linger, "--cluster.standby")...)
	// While it waits for the lock, the standby answers 503 at once (a
	// producer tries the serving node next), not after a timeout.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, _, err := appendBatch(context.Background(), b.api, "probe", 1, []string{"probe-1-a"})
		if code == http.StatusServiceUnavailable {
			break
		}
		if code != 0 || time.Now().After(deadline) {
			t.Fatalf("the waiting standby answered %d (%v), want 503", code, err)
		}
	}
	var nodesMu sync.Mutex
	nodes := []string{a.api, b.api}
	p := startWALProducers(4, func() []string {
		nodesMu.Lock()
		defer nodesMu.Unlock()
		return nodes
	})
	p.waitAcks(t, 300)
	// Wait until the node's checkpoint has dropped the start of its log
	// (tier 2 holds it): the standby must then rebuild the segment from
	// tier 2's end and the rest of the log.
	from := c.waitCheckpointMoved(t)
	p.waitAcks(t, 50)
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	before := p.count()
	waitReady(t, b)
	p.waitAcks(t, 200)
	lines := checkServed(t, b.api, p.snapshot())
	adopted := adoptLine(t, b)
	// "from" above 0: the dead node's checkpoints had dropped what tier 2
	// held, and the standby rebuilt the rest from the log and tier 2.
	t.Logf("the serving node's checkpoint had moved to %d before the kill; standby: %s", from, adopted)

	// The standby dies too. A third node, started afterwards on its own
	// empty directory, adopts the standby's log (which holds the first
	// node's frames, copied) and skips the first node's, emptied.
	if err := b.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	b.cmd.Wait()
	c3 := c.startNode(t, append(linger, "--cluster.standby")...)
	nodesMu.Lock()
	nodes = []string{c3.api}
	nodesMu.Unlock()
	waitReady(t, c3)
	p.waitAcks(t, 100)
	acks := p.finish()
	lines3 := checkServed(t, c3.api, acks)
	by := map[string]int{}
	for _, x := range acks {
		by[x.node]++
	}
	if by[b.api] == 0 || by[c3.api] == 0 {
		t.Fatalf("acknowledgements by node: %v; the standby and the third node must each have acknowledged batches", by)
	}
	t.Logf("third node: %s", adoptLine(t, c3))
	t.Logf("%d batches acknowledged before the first kill, %d by the standby, %d by the third node; %d events served after the first takeover, %d after the second, none lost or twice; non-200 answers %v",
		before, by[b.api], by[c3.api], len(lines), len(lines3), p.codes)
}

// adoptLine is the last log line of s saying it adopted a log.
func adoptLine(t *testing.T, s *siltServer) string {
	t.Helper()
	var adopted string
	for _, l := range strings.Split(s.logText(), "\n") {
		if strings.Contains(l, "adopted the write-ahead log") {
			adopted = l
		}
	}
	if adopted == "" {
		t.Fatalf("%s did not adopt the dead node's log; its output:\n%s", s.api, s.logText())
	}
	return adopted
}

// TestClusterWALFencing: the serving node is stopped (SIGSTOP) past its
// lease, the standby takes over (lock and fence), and the stopped node is
// continued (SIGCONT): no batch it takes from then on is acknowledged —
// its in-flight batch and a later one get 503 or no answer — it stops
// serving with a log line saying why, and the new node serves every
// acknowledged event once and in order.
func TestClusterWALFencing(t *testing.T) {
	c := newWALCluster(t)
	a := c.startNode(t)
	waitReady(t, a)
	createStream(t, a)
	b := c.startNode(t, "--cluster.standby")
	p := startWALProducers(3, func() []string { return []string{a.api, b.api} })
	p.waitAcks(t, 200)

	// A writer of its own sends only to the old node, one batch after the
	// other: the batch it has in flight when the node stops is answered,
	// if at all, after the takeover.
	type answer struct {
		seq  uint64
		code int
		err  error
	}
	var lateMu sync.Mutex
	var late []answer
	stopLate := make(chan struct{})
	lateDone := make(chan struct{})
	go func() {
		defer close(lateDone)
		for seq := uint64(1); ; seq++ {
			select {
			case <-stopLate:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			code, _, err := appendBatch(ctx, a.api, "late", seq, []string{fmt.Sprintf("late-%d-a", seq)})
			cancel()
			lateMu.Lock()
			late = append(late, answer{seq, code, err})
			lateMu.Unlock()
			if code != http.StatusOK {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	lateMu.Lock()
	atStop := len(late)
	lateMu.Unlock()
	waitReady(t, b)
	p.waitAcks(t, 100)
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The old node steps down: it exits (a hang stop bounds the wait).
	exited := make(chan error, 1)
	go func() { exited <- a.cmd.Wait() }()
	select {
	case err := <-exited:
		t.Logf("the old node exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatalf("the old node still runs a minute after SIGCONT; its output:\n%s", a.logText())
	}
	close(stopLate)
	<-lateDone
	p.waitAcks(t, 50)
	acks := p.finish()

	lateMu.Lock()
	defer lateMu.Unlock()
	var lateAcks []walAck
	for i, x := range late {
		if x.code == http.StatusOK && i >= atStop {
			// Answered after the stop: only a batch committed before the
			// stop may be acknowledged late, and then the new node has it.
			lateAcks = append(lateAcks, walAck{node: "old node, late", events: []string{fmt.Sprintf("late-%d-a", x.seq)}})
		}
	}
	lines := checkServedLate(t, b.api, acks, lateAcks)
	rejected := 0
	for _, x := range late[atStop:] {
		if x.code != http.StatusOK {
			rejected++
		}
	}
	if rejected == 0 {
		t.Fatalf("the old node acknowledged every batch sent to it after SIGSTOP: %+v", late[atStop:])
	}
	var why string
	for _, l := range strings.Split(a.logText(), "\n") {
		if strings.Contains(l, `"msg":"stopping`) {
			why = l
		}
	}
	if !strings.Contains(why, "fenced") && !strings.Contains(why, "another node") && !strings.Contains(why, "serving lock") {
		t.Fatalf("the old node's log does not say why it stopped:\n%s", a.logText())
	}
	t.Logf("the old node: %s", why)
	codes := map[int]int{}
	for _, x := range late[atStop:] {
		codes[x.code]++
	}
	t.Logf("old node after SIGSTOP: answers by status %v (0: no answer, it stopped); %d late acknowledgements, all served; %d events served by the new node",
		codes, len(lateAcks), len(lines))
}

// checkServedLate is checkServed with acknowledgements whose offsets are
// unknown (late answers): each must be served exactly once.
func checkServedLate(t *testing.T, api string, acks, late []walAck) []string {
	t.Helper()
	lines := checkServed(t, api, acks)
	have := map[string]bool{}
	for _, l := range lines {
		have[l] = true
	}
	for _, a := range late {
		for _, e := range a.events {
			if !have[e] {
				t.Fatalf("%s acknowledged %q, which the new node does not serve", a.node, e)
			}
		}
	}
	return lines
}

// TestClusterWALOutages: with etcd stopped (SIGSTOP, as a hung server),
// and then with the object store stopped, appends under durability
// cluster answer 503 — within the request timeout, never a hang — and
// none is acknowledged; once each is back, appends go on and every
// acknowledged event is served once.
func TestClusterWALOutages(t *testing.T) {
	c := newWALCluster(t)
	a := c.startNode(t)
	waitReady(t, a)
	createStream(t, a)
	p := startWALProducers(2, func() []string { return []string{a.api} })
	p.waitAcks(t, 100)
	for _, o := range []struct {
		name          string
		pause, resume func() error
	}{
		{"etcd", c.etcd.Pause, c.etcd.Resume},
		{"object store", c.moto.Pause, c.moto.Resume},
	} {
		if err := o.pause(); err != nil {
			t.Fatal(err)
		}
		// The kernel's signal is asynchronous; a request right after it
		// may still be answered.
		time.Sleep(100 * time.Millisecond)
		codes := map[int]int{}
		for seq := uint64(1); seq <= 3; seq++ {
			// The client's bound is a hang stop, far above the 2 s
			// request timeout the node runs with.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			w := "probe" + strings.ReplaceAll(o.name, " ", "")
			code, _, err := appendBatch(ctx, a.api, w, seq, []string{fmt.Sprintf("%s-%d-a", w, seq)})
			cancel()
			if code == 0 {
				o.resume()
				t.Fatalf("%s stopped: an append got no answer: %v", o.name, err)
			}
			codes[code]++
		}
		if err := o.resume(); err != nil {
			t.Fatal(err)
		}
		if codes[http.StatusServiceUnavailable] != 3 {
			t.Fatalf("%s stopped: appends answered %v, want 503 each time", o.name, codes)
		}
		p.waitAcks(t, 50)
		t.Logf("%s stopped: appends answered %v; after it came back the producers went on", o.name, codes)
	}
	acks := p.finish()
	lines := checkServed(t, a.api, acks)
	t.Logf("%d acknowledged batches, %d events served, none lost or twice; producers' non-200 answers %v", len(acks), len(lines), p.codes)
}

// TestClusterWALDurabilitySwitchRefused: a data directory that ran with
// durability local holds its untiered events in its own files, which
// durability cluster treats as a cache: started with cluster, it is
// refused, saying what to do, and it still starts with local.
func TestClusterWALDurabilitySwitchRefused(t *testing.T) {
	c := newWALCluster(t)
	a := c.startNode(t, "--cluster.durability", "local")
	waitReady(t, a)
	createStream(t, a)
	if code, _, err := appendBatch(context.Background(), a.api, "w", 1, []string{"kept"}); code != http.StatusOK {
		t.Fatalf("append: %d %v", code, err)
	}
	a.stop()
	r := runSilt(t, invocation{args: serveArgs(freeAddr(t), c.args()...), dir: a.dir})
	if r.code == 0 || !strings.Contains(r.stderr, "ran with durability local") || !strings.Contains(r.stderr, "--cluster.durability local") {
		t.Fatalf("durability cluster on a local directory: exit %d\n%s", r.code, r.stderr)
	}
	// Refused before anything changed: it serves its event with local.
	again := startServerAt(t, a.dir, freeAddr(t), c.args("--cluster.durability", "local")...)
	again.rootToken = walTestToken
	if lines := readAllWAL(t, again.api); len(lines) != 1 || lines[0] != "kept" {
		t.Fatalf("after the refusal, local serves %q", lines)
	}

	// Durability cluster needs the S3 tier 2 for its objects.
	r = runSilt(t, invocation{args: serveArgs(freeAddr(t), c.args("--tiering.backend", "fs", "--cluster.durability", "cluster")...)})
	if r.code == 0 || !strings.Contains(r.stderr, "needs tiering.backend s3") {
		t.Fatalf("durability cluster on an fs tier 2: exit %d\n%s", r.code, r.stderr)
	}
}
