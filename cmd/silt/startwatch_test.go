package main

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/silt-io/silt/core"
)

// TestWatchStart: a store open that runs long is reported again and
// again, saying what it waits for, and nothing more once it is done.
func TestWatchStart(t *testing.T) {
	tests := []struct {
		name   string
		phase  int
		frames int64
		want   string
	}{
		{"catalog", core.PhaseCatalog, 0, "opening the catalog in /data/silt/catalog"},
		{"write-ahead log", core.PhaseWAL, 1234, "replaying the write-ahead log, 1234 frames so far"},
		{"streams", core.PhaseStreams, 99, "loading the streams"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			zc, logs := observer.New(zapcore.InfoLevel)
			stop := watchStart(zap.New(zc), "/data/silt", func() (int, int64) { return tc.phase, tc.frames }, time.Millisecond, time.Millisecond)
			for i := 0; logs.Len() < 3; i++ {
				if i == 10000 {
					stop()
					t.Fatalf("%d lines about a start that does not end", logs.Len())
				}
				time.Sleep(time.Millisecond)
			}
			stop()
			n := logs.Len()
			for _, e := range logs.All() {
				if !strings.Contains(e.Message, tc.want) || e.Level != zapcore.WarnLevel {
					t.Fatalf("%s %q, want a warning saying %q", e.Level, e.Message, tc.want)
				}
			}
			time.Sleep(10 * time.Millisecond)
			if logs.Len() != n {
				t.Fatalf("%d lines logged after the open ended", logs.Len()-n)
			}
		})
	}
	t.Run("a quick open says nothing", func(t *testing.T) {
		zc, logs := observer.New(zapcore.InfoLevel)
		stop := watchStart(zap.New(zc), "/data/silt", func() (int, int64) { return core.PhaseCatalog, 0 }, time.Hour, time.Hour)
		stop()
		stop() // a second stop is harmless
		if logs.Len() != 0 {
			t.Fatalf("%d lines for an open that took no time", logs.Len())
		}
	})
}
