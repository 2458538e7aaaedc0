package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestConcurrentProducersAndFollowers runs 16 producers and 4 follow
// readers at once (meant for -race): every follower must see every event
// once, each producer's events in its order.
func TestConcurrentProducersAndFollowers(t *testing.T) {
	const (
		producers = 16
		followers = 4
		batches   = 20
		perBatch  = 5
		total     = producers * batches * perBatch
	)
	e := newEnv(t)
	e.mkStream("acme", "logs", "lines", 4)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	fs := make([]*follower, followers)
	for i := range fs {
		fs[i] = e.follow(ctx, "max=50")
	}
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				var body bytes.Buffer
				for i := range perBatch {
					fmt.Fprintf(&body, "p%d:%d\n", p, b*perBatch+i)
				}
				hr, _ := http.NewRequest("POST", e.ts.URL+eventsPath("acme", "logs")+"?key=p"+strconv.Itoa(p), &body)
				hr.Header.Set("Authorization", "Bearer "+e.root)
				hr.Header.Set("Content-Type", contentNDJSON)
				hr.Header.Set(headerWriterID, "producer-"+strconv.Itoa(p))
				hr.Header.Set(headerSeq, strconv.Itoa(b+1))
				resp, err := e.ts.Client().Do(hr)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs <- fmt.Errorf("producer %d batch %d: %d", p, b, resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, f := range fs {
		next := map[string]int{}
		for n := 0; n < total; n++ {
			l := f.nextEvent(t, hangStop)
			prod, seq, _ := strings.Cut(string(l.Data), ":")
			k, _ := strconv.Atoi(seq)
			if k != next[prod] {
				t.Fatalf("follower %d: %s event %d, want %d", i, prod, k, next[prod])
			}
			next[prod]++
		}
	}
	cancel()
	for _, f := range fs {
		<-f.done
	}
}
