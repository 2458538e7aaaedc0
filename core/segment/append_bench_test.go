package segment

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/silt-io/silt/core/vfs"
)

// BenchmarkAppendLatency appends 1 KiB events from 1, 16 and 256
// concurrent producers to a log on the real filesystem of b.TempDir (put
// TMPDIR on the disk to measure, not on tmpfs) and reports the ack
// latency percentiles next to ns/op. Latency, not throughput, is what
// group commit trades on, so compare p99 across changes.
func BenchmarkAppendLatency(b *testing.B) {
	for _, n := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("producers=%d", n), func(b *testing.B) {
			l, err := Open(Options{FS: vfs.OS{}, Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ev := make([]byte, 1<<10)
			lat := make([]time.Duration, b.N)
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Producer w takes every n-th append.
					for i := w; i < b.N; i += n {
						t := time.Now()
						if _, err := l.Append(context.Background(), Batch{Events: [][]byte{ev}}); err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(t)
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
