package nfs

import (
	"net/netip"
	"strings"
	"testing"
)

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	e, err := ParseExport("path=/acme;principal=reader")
	if err != nil {
		t.Fatal(err)
	}
	if !e.allows(netip.MustParseAddr("127.0.0.1")) || !e.allows(netip.MustParseAddr("::1")) ||
		!e.allows(netip.MustParseAddr("::ffff:127.0.0.1")) || e.allows(netip.MustParseAddr("10.1.2.3")) {
		t.Fatalf("default allow list = %v", e.Allow)
	}
	e, err = ParseExport(" path = / ; principal = root ; allow = 10.0.0.0/8|192.168.1.7/32 ")
	if err != nil || !e.allows(netip.MustParseAddr("10.9.9.9")) || e.allows(netip.MustParseAddr("127.0.0.1")) {
		t.Fatalf("ParseExport = %+v, %v", e, err)
	}
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"listen":     {Config{Listen: "nope", Exports: DefaultConfig().Exports}, "listen"},
		"none":       {Config{Listen: ":1"}, "at least one export"},
		"deep":       {Config{Listen: ":1", Exports: []string{"path=/a/b;principal=x"}}, "want / or /<tenant>"},
		"relative":   {Config{Listen: ":1", Exports: []string{"path=acme;principal=x"}}, "want / or /<tenant>"},
		"principal":  {Config{Listen: ":1", Exports: []string{"path=/"}}, "principal is required"},
		"cidr":       {Config{Listen: ":1", Exports: []string{"path=/;principal=x;allow=10.0.0.0"}}, "allow"},
		"field":      {Config{Listen: ":1", Exports: []string{"path=/;principal=x;rw=1"}}, "unknown field"},
		"twice":      {Config{Listen: ":1", Exports: []string{"path=/;principal=x", "path=/;principal=y"}}, "twice"},
		"bare field": {Config{Listen: ":1", Exports: []string{"path=/;principal"}}, "key=value"},
		"inflight":   {Config{Listen: ":1", Exports: DefaultConfig().Exports, MaxInflight: -1}, "max_inflight"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}
