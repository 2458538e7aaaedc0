package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/silt-io/silt/client"
)

// The group kill test runs three reader processes in one reader group:
// this test binary re-run with SILT_TEST_GROUP_READER=1 (see TestMain),
// each a client.GroupReader that prints what it reads and commits. One is
// killed with SIGKILL in the middle of its share.
//
// A reader child's protocol, one line each:
//
//	stdout  J                      joined (a member of the group)
//	stdout  E <segment> <offset> <data>   an event, printed before its commit
//	stdout  C <segment> <next>     a commit that succeeded
//	stdin   go                     start reading (after every reader joined)
//	stdin   EOF                    leave the group and exit 0
const groupReaderEnv = "SILT_TEST_GROUP_READER"

// groupReaderChild is the reader process's main.
func groupReaderChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "group reader:", err)
		return 1
	}
	cl, err := client.New(os.Getenv("SILT_TEST_API"), client.WithToken(os.Getenv("SILT_TEST_TOKEN")))
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tenant, group, member := "acme", "g", os.Getenv("SILT_TEST_MEMBER")
	pause, _ := time.ParseDuration(os.Getenv("SILT_TEST_COMMIT_PAUSE"))
	// Join first, read later: the parent says go once all three are
	// members, so that no reader starts on segments a later join takes
	// from it (their re-reads would hide the ones this test is about).
	if _, err := cl.JoinGroup(ctx, tenant, group, member); err != nil {
		return fail(err)
	}
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	fmt.Fprintln(out, "J")
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return fail(fmt.Errorf("want go on stdin, got %q", in.Text()))
	}
	go func() {
		for in.Scan() {
		}
		cancel() // stdin closed: stop
	}()
	// Joining again as a live member returns the current assignment.
	r, err := cl.NewGroupReader(ctx, tenant, group, client.GroupReaderOptions{Member: member, Max: 500, Wait: 100 * time.Millisecond})
	if err != nil {
		return fail(err)
	}
	read := map[string]uint64{} // segment -> next offset, since the last commit
	for ctx.Err() == nil {
		evs, err := r.Next(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			return fail(err)
		}
		for _, ev := range evs {
			fmt.Fprintf(out, "E %s %d %s\n", ev.Segment, ev.Offset, ev.Data)
			read[ev.Segment] = ev.Offset + 1
		}
		// Printed before committed: everything committed was printed.
		if err := out.Flush(); err != nil {
			return fail(err)
		}
		// The reader to be killed pauses between printing and committing,
		// so that the kill lands there and it dies having read past its
		// last commit (the case the test is about).
		if len(evs) > 0 && pause > 0 {
			time.Sleep(pause)
		}
		switch err := r.Commit(ctx); {
		case err == nil:
			for seg, next := range read {
				fmt.Fprintf(out, "C %s %d\n", seg, next)
			}
			clear(read)
		case err == client.ErrRebalanced:
			clear(read) // moved segments are read again by their new reader
		case ctx.Err() != nil:
		default:
			return fail(err)
		}
		out.Flush()
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer lcancel()
	if err := r.Close(lctx); err != nil {
		return fail(err)
	}
	return 0
}

// readerProc is a running reader child and what it printed.
type readerProc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when its stdout ends
	// killAt, if not 0, is the event count at which the reader is killed
	// with SIGKILL, from the goroutine reading its output: right after it
	// printed a batch and before it printed the batch's commit, so that
	// it most likely dies having read past its last commit.
	killAt int
	killed chan time.Time
	mu     struct {
		sync.Mutex
		events []readEvent
		commit map[string]uint64 // segment -> last commit printed
		joined bool
	}
}

type readEvent struct {
	segment string
	offset  uint64
	key     string
	seq     int
}

func startGroupReader(t *testing.T, s *siltServer, name string, killAt int) *readerProc {
	t.Helper()
	p := &readerProc{name: name, done: make(chan struct{}), killAt: killAt, killed: make(chan time.Time, 1)}
	p.mu.commit = map[string]uint64{}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	token := s.token
	if token == "" {
		token = s.rootToken
	}
	p.cmd.Env = append(os.Environ(), groupReaderEnv+"=1", "SILT_TEST_API="+s.api, "SILT_TEST_TOKEN="+token, "SILT_TEST_MEMBER="+name)
	if killAt > 0 {
		p.cmd.Env = append(p.cmd.Env, "SILT_TEST_COMMIT_PAUSE=50ms")
	}
	p.cmd.Stderr = os.Stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stdin.Close()
		p.cmd.Process.Kill()
		<-p.done
		p.cmd.Wait()
	})
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.line(t, sc.Text())
		}
	}()
	return p
}

func (p *readerProc) line(t *testing.T, l string) {
	f := strings.Fields(l)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case len(f) == 1 && f[0] == "J":
		p.mu.joined = true
	case len(f) == 4 && f[0] == "E":
		off, err1 := strconv.ParseUint(f[2], 10, 64)
		key, n, _ := strings.Cut(f[3], "-")
		seq, err2 := strconv.Atoi(n)
		if err1 != nil || err2 != nil {
			t.Errorf("reader %s printed %q", p.name, l)
			return
		}
		p.mu.events = append(p.mu.events, readEvent{segment: f[1], offset: off, key: key, seq: seq})
		if len(p.mu.events) == p.killAt {
			p.cmd.Process.Signal(syscall.SIGKILL)
			p.killed <- time.Now()
		}
	case len(f) == 3 && f[0] == "C":
		next, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			t.Errorf("reader %s printed %q", p.name, l)
			return
		}
		p.mu.commit[f[1]] = next
	default:
		t.Errorf("reader %s printed %q", p.name, l)
	}
}

func (p *readerProc) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.events)
}

// TestGroupKillReader: three reader processes share a group over a
// 12-segment stream; one is killed with SIGKILL mid-read. Its segments go
// to the two others within the session timeout + 1 s; every event is read
// at least once; the only events read twice are of the dead reader's
// segments, at or after its last commit; and each reader reads every
// routing key in order (going back only where it takes a segment up again
// from a commit).
func TestGroupKillReader(t *testing.T) {
	const segments, keys = 12, 1200
	events := 1_000_000
	if testing.Short() {
		events = 60_000
	}
	const session = 3 * time.Second
	s := startServer(t, t.TempDir())
	s.must(t, "", "tenant", "create", "acme")
	s.must(t, "", "stream", "create", "acme/orders", "--segments", strconv.Itoa(segments))
	token := s.token
	if token == "" {
		token = s.rootToken
	}
	cl, err := client.New(s.api, client.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.CloseIdleConnections()
	ctx := t.Context()

	// The backlog: events keyed k0000..k1199, numbered per key, so that a
	// key's events sit in one segment in order.
	prod, err := cl.NewProducer("acme", "orders", client.ProducerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		k := i % keys
		if _, err := prod.Send(ctx, fmt.Sprintf("k%04d", k), fmt.Appendf(nil, "k%04d-%d", k, i/keys)); err != nil {
			t.Fatal(err)
		}
	}
	if err := prod.Close(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := cl.GetStream(ctx, "acme", "orders")
	if err != nil {
		t.Fatal(err)
	}
	size := map[string]uint64{}
	var total uint64
	for _, sg := range st.Segments {
		size[sg.ID] = sg.NextOffset
		total += sg.NextOffset
	}
	if total != uint64(events) {
		t.Fatalf("stream holds %d events, want %d", total, events)
	}
	if _, err := cl.CreateGroup(ctx, "acme", client.GroupSpec{Name: "g", Streams: []string{"orders"}, SessionTimeout: session}); err != nil {
		t.Fatal(err)
	}

	// r1 is killed once it has read a tenth of its share.
	readers := []*readerProc{startGroupReader(t, s, "r0", 0), startGroupReader(t, s, "r1", events/30), startGroupReader(t, s, "r2", 0)}
	waitUntil(t, "every reader to join", func() bool {
		for _, r := range readers {
			r.mu.Lock()
			j := r.mu.joined
			r.mu.Unlock()
			if !j {
				return false
			}
		}
		return true
	})
	for _, r := range readers {
		if _, err := io.WriteString(r.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	g, err := cl.GetGroup(ctx, "acme", "g")
	if err != nil {
		t.Fatal(err)
	}
	owned := map[string][]string{} // member -> segments
	for _, m := range g.Members {
		for _, sg := range m.Segments {
			owned[m.ID] = append(owned[m.ID], sg.Segment)
		}
	}
	if len(g.Members) != 3 || len(owned["r1"]) == 0 {
		t.Fatalf("group before the kill: %+v", g)
	}

	victim := readers[1]
	var killed time.Time
	select {
	case killed = <-victim.killed:
	case <-time.After(5 * time.Minute):
		t.Fatal("timed out waiting for r1 to read a tenth of its share")
	}
	<-victim.done
	victim.cmd.Wait()

	// Reassignment: r1 gone and its segments held by r0 and r2.
	var reassigned time.Duration
	waitUntil(t, "r1's segments to be reassigned", func() bool {
		asked := time.Since(killed)
		g, err := cl.GetGroup(ctx, "acme", "g")
		if err != nil {
			t.Fatal(err)
		}
		held := map[string]bool{}
		for _, m := range g.Members {
			if m.ID == "r1" {
				return false
			}
			for _, sg := range m.Segments {
				held[sg.Segment] = true
			}
		}
		for _, sg := range owned["r1"] {
			if !held[sg] {
				return false
			}
		}
		reassigned = asked
		return true
	})
	t.Logf("r1 killed after reading %d events; its %d segments reassigned %s later (session timeout %s)", victim.count(), len(owned["r1"]), reassigned.Round(time.Millisecond), session)
	if reassigned > session+time.Second {
		t.Errorf("r1's segments were reassigned %s after the kill, want within the session timeout + 1 s (%s)", reassigned, session+time.Second)
	}

	// Everything read and committed, then the survivors leave.
	waitUntil(t, "the group to read and commit everything", func() bool {
		l, err := cl.GroupLag(ctx, "acme", "g")
		return err == nil && l.EventsBehind == 0
	})
	for _, r := range []*readerProc{readers[0], readers[2]} {
		r.stdin.Close()
		<-r.done
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("reader %s: %v", r.name, err)
		}
	}

	// Every event at least once; re-reads only in r1's segments, at or
	// after r1's last commit there.
	victimSegs := map[string]bool{}
	for _, sg := range owned["r1"] {
		victimSegs[sg] = true
	}
	counts := map[string][]uint8{}
	for seg, n := range size {
		counts[seg] = make([]uint8, n)
	}
	for _, r := range readers {
		checkReaderOrder(t, r)
		for _, ev := range r.mu.events {
			c := counts[ev.segment]
			if ev.offset >= uint64(len(c)) {
				t.Fatalf("reader %s read %s/%d, past the segment's end %d", r.name, ev.segment, ev.offset, len(c))
			}
			if c[ev.offset] < 255 {
				c[ev.offset]++
			}
		}
	}
	reread := 0
	for seg, c := range counts {
		for off, n := range c {
			switch {
			case n == 0:
				t.Fatalf("event %s/%d was never read", seg, off)
			case n > 1:
				reread++
				if !victimSegs[seg] {
					t.Fatalf("event %s/%d read %d times, but segment %s was not the dead reader's", seg, off, n, seg)
				}
				if last := victim.mu.commit[seg]; uint64(off) < last {
					t.Fatalf("event %s/%d read %d times, below the dead reader's last commit there (%d)", seg, off, n, last)
				}
			}
		}
	}
	if reread == 0 {
		t.Error("no event was read twice: r1 died with nothing read past its last commit, so the re-read rule was not tested")
	}
	t.Logf("%d events, %d read twice (after r1's last commits)", events, reread)
}

// checkReaderOrder: within each segment a reader goes on from the offset
// after the last (or goes back, to take a segment up again from a commit,
// never forward past unread events), and each key's numbers grow except
// where its segment went back.
func checkReaderOrder(t *testing.T, r *readerProc) {
	t.Helper()
	lastOff := map[string]uint64{}
	lastSeq := map[string]int{}
	segOf := map[string]string{}
	for _, ev := range r.mu.events {
		if l, ok := lastOff[ev.segment]; ok {
			switch {
			case ev.offset > l+1:
				t.Fatalf("reader %s skipped from %d to %d in segment %s", r.name, l, ev.offset, ev.segment)
			case ev.offset <= l:
				for k, seg := range segOf { // a restart: keys of the segment start over
					if seg == ev.segment {
						delete(lastSeq, k)
					}
				}
			}
		}
		lastOff[ev.segment] = ev.offset
		if seg, ok := segOf[ev.key]; ok && seg != ev.segment {
			t.Fatalf("key %s in segments %s and %s", ev.key, seg, ev.segment)
		}
		segOf[ev.key] = ev.segment
		if l, ok := lastSeq[ev.key]; ok && ev.seq <= l {
			t.Fatalf("reader %s read key %s's event %d after %d", r.name, ev.key, ev.seq, l)
		}
		lastSeq[ev.key] = ev.seq
	}
}

// waitUntil polls cond; the deadline only stops a hung test.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
