package objwal_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/silt-io/silt/cluster"
	"github.com/silt-io/silt/core/wal"
	"github.com/silt-io/silt/core/wal/objwal"
)

// childEnv carries "<s3 endpoint> <etcd endpoint> <node>" to the child.
const childEnv = "SILT_OBJWAL_KILL_CHILD"

// TestKillNine runs a writer as a child process (this test binary) that
// appends through a wal.Log on objects from 8 goroutines and prints each
// acknowledged frame, kills it with SIGKILL mid-stream, and checks that a
// fresh process recovers every acknowledged frame, three times over.
func TestKillNine(t *testing.T) {
	if spec := os.Getenv(childEnv); spec != "" {
		runChild(t, strings.Fields(spec))
		return
	}
	e := newEnv(t)
	node := e.newNode()
	acked := map[uint64]string{}
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillNine$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+e.moto.Endpoint+" "+e.etcd.Endpoint+" "+node)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		n, killed := 0, false
		for sc.Scan() {
			var pos uint64
			var body string
			if _, err := fmt.Sscanf(sc.Text(), "ack %d %s", &pos, &body); err != nil {
				continue // the test framework's own lines
			}
			acked[pos] = body
			if n++; n == 150 && !killed {
				cmd.Process.Kill()
				killed = true
			}
		}
		cmd.Wait()
		if !killed {
			t.Fatalf("round %d: the child ended after %d acknowledgements without being killed", round, n)
		}
		b := e.open(t, node)
		got := map[uint64]string{}
		if _, err := b.Recover(0, func(pos uint64, body []byte) error {
			got[pos] = string(body)
			return nil
		}); err != nil {
			t.Fatalf("round %d: recover after kill -9: %v", round, err)
		}
		for pos, body := range acked {
			if got[pos] != body {
				t.Fatalf("round %d: acknowledged frame at %d (%.30q) recovered as %.30q", round, pos, body, got[pos])
			}
		}
		t.Logf("round %d: %d frames acknowledged in all, %d recovered", round, len(acked), len(got))
	}
}

// runChild is the killed process: it takes the log over, recovers it and
// appends until killed, printing "ack <pos> <body>" once each frame is
// acknowledged.
func runChild(t *testing.T, spec []string) {
	if len(spec) != 3 {
		t.Fatalf("%s: want 3 fields, got %q", childEnv, spec)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{spec[1]}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	store := cluster.WALObjects{B: openS3(t, spec[0])}
	b, err := objwal.Open(options(store, cluster.NewWALFence(cli, "/silt-test/wal/"+spec[2]+"/"), spec[2]))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := b.Recover(0, func(uint64, []byte) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	l := wal.Open(wal.Options{Backend: b}, rec.End)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				body := fmt.Sprintf("e%d-g%d-%d-%s", b.Epoch(), g, i, strings.Repeat("z", 200+i%300))
				pos, err := appendFrame(l, body)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child append:", err)
					return
				}
				mu.Lock()
				fmt.Printf("ack %d %s\n", pos, body)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Fatal("every producer stopped before the kill")
}
