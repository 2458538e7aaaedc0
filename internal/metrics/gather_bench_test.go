package metrics

import (
	"fmt"
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// BenchmarkScrape10kStreams gathers and encodes the producer series of
// 10,000 streams, as /metrics does (bench/scalebench -cases metrics
// measures the whole server's scrape).
func BenchmarkScrape10kStreams(b *testing.B) {
	reg := prometheus.NewRegistry()
	set, err := New(DefaultConfig(), reg)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 10000; i++ {
		set.Producers.Appended(fmt.Sprintf("idle-%02d", i%10), fmt.Sprintf("s%07d", i), 1, 10, 0)
	}
	g := set.Gatherer(reg)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mfs, err := g.Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(io.Discard, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
}
