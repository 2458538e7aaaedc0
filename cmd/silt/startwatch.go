package main

import (
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
)

// How soon and how often a slow store open is reported: a start that
// takes longer than a few seconds must never leave an operator before a
// silent process (a catalog on a full disk used to spin without a line).
const (
	startWatchAfter = 3 * time.Second
	startWatchEvery = 5 * time.Second
)

// watchStart logs what the store's Open is waiting for, once it has run
// for after and then every every, until stop is called. phase is
// core.Progress.Phase.
func watchStart(log *zap.Logger, dir string, phase func() (int, int64), after, every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		t := time.NewTimer(after)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			log.Warn("start-up is slow: "+startWaitingFor(dir, phase), zap.Duration("waited", time.Since(start).Round(time.Second)))
			t.Reset(every)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// startWaitingFor says what an Open in the given phase is doing.
func startWaitingFor(dir string, phase func() (int, int64)) string {
	p, frames := phase()
	switch p {
	case core.PhaseCatalog:
		return "opening the catalog in " + filepath.Join(dir, "catalog")
	case core.PhaseWAL:
		return fmt.Sprintf("replaying the write-ahead log, %d frames so far", frames)
	case core.PhaseStreams:
		return "loading the streams"
	}
	return "opening the store in " + dir
}
