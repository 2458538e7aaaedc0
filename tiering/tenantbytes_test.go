package tiering

import (
	"context"
	"testing"

	"github.com/silt-io/silt/core"
)

// TenantBytes adds up each tenant's committed chunks from the segment
// records, tenant by tenant, streams and segments together.
func TestTenantBytes(t *testing.T) {
	e := newEnv(t, testConfig())
	e.createStream("acme", "s", core.EncodingLines, 2)
	e.createStream("acme", "t", core.EncodingLines, 1)
	e.createStream("beta", "s", core.EncodingLines, 1)
	// Ten 100-byte lines seal one 1,000-byte chunk (max_chunk_bytes).
	fill := func(tenant, stream, seg string, chunks int) {
		for i := 0; i < chunks; i++ {
			for _, ev := range events("e", 10, 99) {
				e.append(tenant, stream, seg, ev)
			}
		}
	}
	fill("acme", "s", "0", 2)
	fill("acme", "s", "1", 1)
	fill("acme", "t", "0", 1)
	fill("beta", "s", "0", 3)
	e.scan()
	got, err := e.tr.TenantBytes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got["acme"] != 4000 || got["beta"] != 3000 || len(got) != 2 {
		t.Fatalf("TenantBytes = %v, want acme 4000, beta 3000", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.tr.TenantBytes(ctx); err == nil {
		t.Fatal("TenantBytes ran on a cancelled context")
	}
}
