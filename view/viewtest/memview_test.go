package viewtest

import (
	"testing"
	"time"

	"github.com/silt-io/silt/view"
)

func TestMemViewConforms(t *testing.T) {
	RunViewSuite(t, func(t *testing.T) (view.View, Fixture) {
		fx := Fixture{
			Files: map[string][]byte{
				"/acme/clicks/segment=0/00000000000000000000-00000000000000000002.txt": []byte("a\nb\nc\n"),
				"/acme/clicks/segment=0/00000000000000000003-00000000000000000003.txt": []byte("d\n"),
				"/acme/clicks/segment=1/00000000000000000000-00000000000000000000.txt": []byte("x\n"),
				"/acme/clicks/_manifest.json":                                          []byte(`{}`),
				"/beta/empty-file/segment=0/x.bin":                                     {},
			},
			Dirs: []string{"/gamma", "/acme/idle"},
		}
		return NewMemView(fx, time.Unix(1700000000, 0)), fx
	})
}
