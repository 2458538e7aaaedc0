package catalog

import (
	"os"
	"testing"
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
