package query

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Stats over events split across segments and streams equal stats over
// the same events in one segment: the merge may change the order rows
// arrive in, never the groups' results.
func TestStatsSplitScanEqualsOneScan(t *testing.T) {
	const q = `stats count(), sum(v), min(v), max(v), avg(v), p50(v), dcount(u) by k | sort k`
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(300)
		var lines []string
		var secs []int
		for i := 0; i < n; i++ {
			// Small integers: sums are exact in any order.
			lines = append(lines, fmt.Sprintf(`{"k":"k%d","v":%d,"u":%d}`, rng.IntN(7), rng.IntN(1000)-500, rng.IntN(20)))
			secs = append(secs, i)
		}
		one := memSource{"a1b/one": {"0": seg(secs, lines...)}}
		// The same events dealt to three segments of two streams.
		split := memSource{"a1b/x": {}, "a1b/y": {}}
		parts := map[string][]int{}
		for i := range lines {
			key := []string{"x/0", "x/1", "y/0"}[rng.IntN(3)]
			parts[key] = append(parts[key], i)
		}
		for key, idx := range parts {
			var ls []string
			var ss []int
			for _, i := range idx {
				ls, ss = append(ls, lines[i]), append(ss, secs[i])
			}
			stream, segID := key[:1], key[2:]
			split["a1b/"+stream][segID] = seg(ss, ls...)
		}
		a, _, err := runText(t, one, "from a1b/one | "+q, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		b, _, err := runText(t, split, "from a1b/x, a1b/y | "+q, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) {
			t.Fatalf("seed %d: one scan\n%s\nsplit scan\n%s", seed, joinLines(a), joinLines(b))
		}
	}
}

// FuzzParse: no text makes the parser panic, and every refusal is an
// *Error with a position inside the text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`from acme/clicks since -1h | where status >= 500 and head == "s3" | stats count(), p99(latency_ms) by principal | sort -count | head 10`,
		`from a1b/x cut "0:1" upto "0:9", a1b/y until "2026-01-02T00:00:00Z" | window sliding 5m every 1m | stats count() by window_start`,
		`from a1b/x | join kind=left (from a1b/y | project k, v) on k | parse regex msg ` + "`(?P<a>\\w+)`" + ` | top 3 by -v`,
		`from a1b/x | eval a = [1, 2][0], b = {"x": (1 + 2)} | bin a 10 | parse json | project a, b`,
		"from", "|", `"`, "from a/b | where (", "from a1b/x | stats percentile(v, 99.9)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		_, err := Parse(src, Limits{})
		if err == nil {
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%q: error %T %v is not *Error", src, err, err)
		}
		if e.Line < 1 || e.Column < 1 {
			t.Fatalf("%q: position %d:%d", src, e.Line, e.Column)
		}
	})
}
