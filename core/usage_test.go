package core

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"
)

// TenantLogBytes is the size of each tenant's segment files: what a walk
// of the tenant's log directory finds, tenant by tenant.
func TestTenantLogBytes(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir)
	defer s.Close()
	for _, tenant := range []string{"acme", "beta", "idle"} {
		if _, err := s.CreateTenant(ctx, tenant, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, ts := range [][2]string{{"acme", "a"}, {"acme", "b"}, {"beta", "a"}} {
		if _, err := s.CreateStream(ctx, ts[0], ts[1], StreamConfig{Encoding: EncodingLines}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, AppendRequest{Tenant: ts[0], Stream: ts[1], Segment: "0", Events: [][]byte{[]byte("one"), []byte("two")}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.TenantLogBytes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range []string{"acme", "beta"} {
		var want int64
		filepath.WalkDir(filepath.Join(dir, "logs", tenant), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				info, _ := d.Info()
				want += info.Size()
			}
			return nil
		})
		if want == 0 || got[tenant] != want {
			t.Errorf("%s: TenantLogBytes %d, files hold %d", tenant, got[tenant], want)
		}
	}
	if got["acme"] <= got["beta"] {
		t.Errorf("acme (two streams) %d bytes, beta (one) %d", got["acme"], got["beta"])
	}
	if n, ok := got["idle"]; ok && n != 0 {
		t.Errorf("a tenant without streams holds %d bytes", n)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.TenantLogBytes(cancelled); err == nil {
		t.Error("TenantLogBytes ran on a cancelled context")
	}
}
