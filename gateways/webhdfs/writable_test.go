package webhdfs

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"math"
	"testing"
)

// TestVLong checks WritableUtils.writeVLong's encoding byte for byte;
// the expected bytes follow Hadoop's algorithm by hand.
func TestVLong(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want string
	}{
		{0, "00"}, {1, "01"}, {127, "7f"}, {-112, "90"},
		{-113, "8770"}, {128, "8f80"}, {255, "8fff"}, {256, "8e0100"},
		{1700000000000, "8a018bcfe56800"},
		{math.MaxInt64, "887fffffffffffffff"}, {math.MinInt64, "807fffffffffffffff"},
	} {
		var w writer
		w.vlong(tc.v)
		if got := hex.EncodeToString(w.b); got != tc.want {
			t.Errorf("vlong(%d) = %s, want %s", tc.v, got, tc.want)
		}
		r := &reader{b: w.b}
		if got := r.vlong(); r.err != nil || got != tc.v || len(r.b) != 0 {
			t.Errorf("read vlong %s = %d, %v; want %d", tc.want, got, r.err, tc.v)
		}
	}
}

func TestIdentifierEncoding(t *testing.T) {
	id := tokenIdent{owner: "alice", renewer: "yarn", issueDate: 0, maxDate: 1, sequence: 1}
	// version, Text owner, Text renewer, Text realUser (empty), vlongs.
	want := "00" + "05616c696365" + "047961726e" + "00" + "00" + "01" + "01" + "00"
	if got := hex.EncodeToString(id.encode()); got != want {
		t.Fatalf("identifier %s, want %s", got, want)
	}
	id = tokenIdent{owner: "ünïcode", renewer: "r", realUser: "x", issueDate: 1700000000000, maxDate: 1700604800000, sequence: 1 << 30, masterKeyID: 7}
	got, err := decodeIdent(id.encode())
	if err != nil || got != id {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "01", "00", "0005616c6963", "00" + "05616c696365" + "00" + "00" + "00" + "00" + "01" + "00" + "ff"} {
		b, _ := hex.DecodeString(bad)
		if _, err := decodeIdent(b); err == nil {
			t.Errorf("decodeIdent(%s) accepted", bad)
		}
	}
}

func TestTokenEncoding(t *testing.T) {
	tok := hadoopToken{identifier: []byte{1, 2, 3}, password: []byte{0xfb, 0xff}, kind: kindWebHDFS, service: "127.0.0.1:9870"}
	s := tok.encode()
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte{3, 1, 2, 3, 2, 0xfb, 0xff, 18}, kindWebHDFS+"\x0e127.0.0.1:9870"...)
	if !bytes.Equal(raw, want) {
		t.Fatalf("token bytes %x, want %x", raw, want)
	}
	for name, in := range map[string]string{
		"url-safe":    s,
		"padded std":  base64.StdEncoding.EncodeToString(raw),
		"padded safe": base64.URLEncoding.EncodeToString(raw),
	} {
		got, err := decodeToken(in)
		if err != nil || !bytes.Equal(got.identifier, tok.identifier) || !bytes.Equal(got.password, tok.password) ||
			got.kind != tok.kind || got.service != tok.service {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
	for _, bad := range []string{"", "!!!", base64.RawURLEncoding.EncodeToString(append(raw, 0)),
		base64.RawURLEncoding.EncodeToString(raw[:len(raw)-1]), "silt_abcdefghijklmnopqrstuvwxyz234567abcdefghijklmnopqrst"} {
		if _, err := decodeToken(bad); err == nil {
			t.Errorf("decodeToken(%q) accepted", bad)
		}
	}
}

func FuzzDecodeToken(f *testing.F) {
	f.Add(hadoopToken{identifier: tokenIdent{owner: "a", renewer: "b", sequence: 3}.encode(), password: []byte("pw"), kind: kindWebHDFS, service: "h:1"}.encode())
	f.Add("silt_abc")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := decodeToken(s)
		if err != nil {
			return
		}
		again, err := decodeToken(tok.encode())
		if err != nil || !bytes.Equal(again.identifier, tok.identifier) || again.kind != tok.kind {
			t.Fatalf("re-encoded token does not decode: %v", err)
		}
		if id, err := decodeIdent(tok.identifier); err == nil {
			if back, err := decodeIdent(id.encode()); err != nil || back != id {
				t.Fatalf("identifier round trip: %+v %v", back, err)
			}
		}
	})
}
