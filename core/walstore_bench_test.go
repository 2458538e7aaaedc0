package core

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkAppendStreams runs 64 synchronous producers of 1 KiB events,
// each on its own stream or all on one, through the node's WAL (put
// TMPDIR on the disk to measure). Group commit across segments makes the
// two close.
func BenchmarkAppendStreams(b *testing.B) {
	for _, streams := range []int{1, 64} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			ctx := context.Background()
			cfg := DefaultConfig()
			cfg.Dir = b.TempDir()
			s, err := Open(cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.CreateTenant(ctx, "bench", nil)
			for i := 0; i < streams; i++ {
				if _, err := s.CreateStream(ctx, "bench", fmt.Sprintf("s%d", i), StreamConfig{}); err != nil {
					b.Fatal(err)
				}
			}
			ev := make([]byte, 1<<10)
			const producers = 64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := 0; w < producers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name := fmt.Sprintf("s%d", w%streams)
					for i := w; i < b.N; i += producers {
						if _, err := s.Append(ctx, AppendRequest{Tenant: "bench", Stream: name, Events: [][]byte{ev}}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
