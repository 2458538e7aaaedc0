package query

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkStatsByKey is the scan's hot path: decode each JSON event,
// group, count. bench/querybench compares it with jq and DuckDB.
func BenchmarkStatsByKey(b *testing.B) {
	const n = 20000
	lines := make([]string, n)
	secs := make([]int, n)
	size := 0
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"ts":%d,"principal":"user-%d","head":"s3","op":"GetObject","status":200,"bytes":%d,"latency_ms":%d.5,"path":"/acme/clicks/segment=1/%020d"}`, i, i%1000, i*7, i%300, i)
		size += len(lines[i]) + 1
	}
	src := memSource{"a1b/x": {"0": seg(secs, lines...)}}
	q, err := Parse(`from a1b/x | stats count() by principal`, Limits{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := q.Run(context.Background(), src, RunOptions{}, func([]byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
