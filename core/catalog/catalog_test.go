package catalog

import (
	"fmt"
	"testing"
)

func TestCatalogRoundTripAndReopen(t *testing.T) {
	dir := t.TempDir()
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := c.Set(fmt.Sprintf("s/t/%d", i), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Set("u/other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	if err := c.Scan([]byte("s/t/"), []byte("s/t/2"), func(k, v []byte) error {
		got = append(got, fmt.Sprintf("%s=%d", k, v[0]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := "[s/t/2=2 s/t/3=3 s/t/4=4]"; fmt.Sprint(got) != want {
		t.Fatalf("scan = %v, want %s", got, want)
	}
	if _, ok, _ := c.Get([]byte("s/t/9")); ok {
		t.Fatal("missing key reported present")
	}
	if err := c.DeletePrefix("s/"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Get([]byte("s/t/1")); ok {
		t.Fatal("deleted prefix still present")
	}
	if v, ok, _ := c.Get([]byte("u/other")); !ok || string(v) != "x" {
		t.Fatal("unrelated key lost by DeletePrefix")
	}
}

func TestPrefixEnd(t *testing.T) {
	for in, want := range map[string]string{"a": "b", "a\xff": "b", "\xff\xff": ""} {
		if got := string(prefixEnd([]byte(in))); got != want {
			t.Errorf("prefixEnd(%q) = %q, want %q", in, got, want)
		}
	}
}
