package query

import (
	"errors"
	"strings"
	"testing"
)

func TestBind(t *testing.T) {
	const text = `from acme/clicks | where status >= $min and principal == $who | head $n`
	names, err := Params(text)
	if err != nil || strings.Join(names, ",") != "min,n,who" {
		t.Fatalf("Params = %v, %v", names, err)
	}
	cases := []struct {
		name   string
		params map[string]string
		want   string
		err    string
	}{
		{"numbers and a string", map[string]string{"min": "500", "who": "ann", "n": "3"},
			`from acme/clicks | where status >= 500 and principal == "ann" | head 3`, ""},
		{"a value is only ever a value", map[string]string{"min": "1 or true", "who": `x" or "1" == "1`, "n": "3"},
			`from acme/clicks | where status >= "1 or true" and principal == "x\" or \"1\" == \"1" | head 3`, ""},
		{"missing", map[string]string{"min": "1", "n": "3"}, "", `1:58: parameter $who has no value`},
		{"unknown", map[string]string{"min": "1", "who": "a", "n": "3", "max": "9"}, "", "the query has no parameter max (it has [min n who])"},
		{"hex is a string", map[string]string{"min": "0x10", "who": "a", "n": "3"},
			`from acme/clicks | where status >= "0x10" and principal == "a" | head 3`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Bind(text, tc.params)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Bind = %q, %v\nwant %q", got, err, tc.want)
			}
			if _, err := Parse(got, Limits{}); err != nil {
				t.Fatalf("bound text does not parse: %v", err)
			}
		})
	}
	_, err = Parse(text, Limits{})
	var e *Error
	if !errors.As(err, &e) || e.Summary() != "1:36: parameter $min has no value; parameters belong to packaged queries, which are run by name with their values" {
		t.Fatalf("unbound: %v", err)
	}
}
