package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"testing"

	"github.com/silt-io/silt/client"
)

// fakePages yields pages of n streams each; before asking for page i+1 it
// records what had been printed, to show that output does not wait for
// the end of the listing.
func fakePages(pages, n int, out *bytes.Buffer, seen *[]int, fail error) iter.Seq2[[]client.Stream, error] {
	return func(yield func([]client.Stream, error) bool) {
		for p := range pages {
			*seen = append(*seen, out.Len())
			var page []client.Stream
			for i := range n {
				page = append(page, client.Stream{Tenant: "acme", Name: fmt.Sprintf("s%d-%d", p, i), Config: client.StreamConfig{Encoding: "lines", Segments: 1}})
			}
			if !yield(page, nil) {
				return
			}
		}
		if fail != nil {
			yield(nil, fail)
		}
	}
}

func TestPrintPages(t *testing.T) {
	row := func(w io.Writer, s client.Stream) { fmt.Fprintf(w, "%s\t%s\n", s.Name, s.Config.Encoding) }
	cases := map[string]struct {
		output      string
		pages, n    int
		fail        error
		wantErr     bool
		wantPrinted func(t *testing.T, stdout string)
	}{
		"text": {output: "text", pages: 3, n: 2, wantPrinted: func(t *testing.T, out string) {
			if lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); len(lines) != 7 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[6], "s2-1") {
				t.Fatalf("text %q", out)
			}
		}},
		"json is print's array": {output: "json", pages: 3, n: 2},
		"json, empty":           {output: "json", pages: 0, n: 0},
		"json, empty pages":     {output: "json", pages: 2, n: 0},
		"error part-way":        {output: "text", pages: 2, n: 1, fail: errors.New("boom"), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			var seen []int
			a := &app{stdout: &out, output: tc.output}
			err := printPages(a, fakePages(tc.pages, tc.n, &out, &seen, tc.fail), "NAME\tENCODING", row)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			// Every page after the first is asked for only once the one
			// before it is printed.
			for i := 1; i < len(seen); i++ {
				if tc.n > 0 && seen[i] <= seen[i-1] {
					t.Fatalf("page %d asked for with %d bytes printed, as after page %d", i, seen[i], i-1)
				}
			}
			if tc.wantPrinted != nil {
				tc.wantPrinted(t, out.String())
			}
			if tc.output == "json" {
				// The streamed array is byte for byte what print writes.
				var all []client.Stream
				var dummy []int
				for page := range fakePages(tc.pages, tc.n, &bytes.Buffer{}, &dummy, nil) {
					all = append(all, page...)
				}
				if all == nil {
					all = []client.Stream{}
				}
				var want bytes.Buffer
				if err := (&app{stdout: &want, output: "json"}).print(all, nil); err != nil {
					t.Fatal(err)
				}
				if out.String() != want.String() {
					t.Fatalf("streamed\n%s\nprint\n%s", out.String(), want.String())
				}
			}
		})
	}
}
