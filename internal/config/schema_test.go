package config

import (
	"strings"
	"testing"
	"time"
)

func TestSchemaErrors(t *testing.T) {
	type noTag struct {
		A string
	}
	type badType struct {
		A *string `koanf:"a"`
	}
	type badKey struct {
		A string `koanf:"Listen"`
	}
	type collideInner struct {
		C string `koanf:"c"`
	}
	type collide struct {
		A   collideInner `koanf:"a_b"`
		Raw string       `koanf:"a_b_c"`
	}
	type reserved struct {
		C string `koanf:"config"`
	}
	type opaque struct {
		T time.Time `koanf:"t"`
	}
	type dup struct {
		A string `koanf:"a"`
		B string `koanf:"a"`
	}
	tests := map[string]struct {
		target any
		want   string
	}{
		"not a pointer":    {noTag{}, "non-nil pointer"},
		"nil pointer":      {(*noTag)(nil), "non-nil pointer"},
		"missing tag":      {&noTag{}, "no koanf tag"},
		"unsupported type": {&badType{}, "unsupported type"},
		"uppercase key":    {&badKey{}, "lowercase"},
		"env collision":    {&collide{}, "both map to environment variable SILT_A_B_C"},
		"reserved key":     {&reserved{}, "reserved"},
		"opaque struct":    {&opaque{}, "no config fields"},
		"duplicate key":    {&dup{}, "defined twice"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := NewLoader(tc.target)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEmbeddedStruct(t *testing.T) {
	type Common struct {
		Level string `koanf:"level"`
	}
	type withEmbed struct {
		Common
		Name string `koanf:"name"`
	}
	var cfg withEmbed
	if _, err := Load(&cfg, []string{"--level=debug"}, []string{"SILT_NAME=x"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Level != "debug" || cfg.Name != "x" {
		t.Errorf("got %+v", cfg)
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"api.listen", "api.max_inflight_bytes", "store.dir", "admin.listen"}
	tests := map[string]string{
		"api.listn":              "api.listen",
		"api.lisetn":             "api.listen", // transposition
		"api.max_inflight_byts":  "api.max_inflight_bytes",
		"store.dri":              "store.dir",
		"listen":                 "api.listen",
		"completely.unrelated.x": "",
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := suggest(in, keys); got != want {
				t.Errorf("suggest(%q) = %q, want %q", in, got, want)
			}
		})
	}
}
