package main

import (
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"text/tabwriter"
)

// printPages prints a listing as its pages arrive, so that a tenant of a
// million streams starts printing at once and never sits in memory whole.
// Text is one header and the rows, aligned page by page; -o json is the
// same array print would write, written one element at a time. An error
// part-way leaves what was printed (the exit status says it is not all).
func printPages[T any](a *app, pages iter.Seq2[[]T, error], header string, row func(w io.Writer, v T)) error {
	asJSON := a.output == "json"
	var tw *tabwriter.Writer
	if !asJSON {
		tw = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, header)
	}
	n := 0
	for page, err := range pages {
		if err != nil {
			if tw != nil {
				tw.Flush()
			}
			return err
		}
		for _, v := range page {
			if !asJSON {
				row(tw, v)
				continue
			}
			b, err := json.MarshalIndent(v, "  ", "  ")
			if err != nil {
				return err
			}
			sep := ",\n  "
			if n == 0 {
				sep = "[\n  "
			}
			if _, err := fmt.Fprintf(a.stdout, "%s%s", sep, b); err != nil {
				return err
			}
			n++
		}
		if tw != nil {
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	if !asJSON {
		return nil
	}
	end := "\n]\n"
	if n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(a.stdout, end)
	return err
}
