package catalog

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(packageCleanups) - 1; i >= 0; i-- {
		packageCleanups[i]()
	}
	os.Exit(code)
}

func mkdirTemp() (string, error) { return os.MkdirTemp("", "catalog-etcd-") }
func removeAll(d string)         { os.RemoveAll(d) }

func contextTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}
