package query

import (
	"errors"
	"testing"
)

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, q, want string
	}{
		{"misspelt from", `form acme/clicks`, "1:1: a query starts with from, found \"form\"; did you mean \"from\"?\n  form acme/clicks\n  ^"},
		{"unknown operator", `from acme/clicks | wher status > 1`, "1:20: unknown operator \"wher\"; did you mean \"where\"?\n  from acme/clicks | wher status > 1\n                     ^"},
		{"unknown aggregate", `from acme/clicks | stats cuont()`, "1:26: unknown aggregate \"cuont\"; did you mean \"count\"?\n  from acme/clicks | stats cuont()\n                           ^"},
		{"unknown field after stats", `from acme/clicks | stats count() by principal | where principle == "x"`, "1:55: unknown field \"principle\"; did you mean \"principal\"?\n  from acme/clicks | stats count() by principal | where principle == \"x\"\n                                                        ^"},
		{"unknown sort field", `from acme/clicks | stats count() by principal | sort -cuont`, "1:55: unknown field \"cuont\"; did you mean \"count\"?\n  from acme/clicks | stats count() by principal | sort -cuont\n                                                        ^"},
		{"unknown function", `from acme/clicks | where lenn(head) > 2`, "1:26: unknown function \"lenn\"; did you mean \"len\"?\n  from acme/clicks | where lenn(head) > 2\n                           ^"},
		{"expression cut short", `from acme/clicks | where status >`, "1:33: the expression ends too early; an operand or a closing bracket is missing\n  from acme/clicks | where status >\n                                  ^"},
		{"second line", "from acme/clicks\n| stats count() by head\n| project heads", "3:11: unknown field \"heads\"; did you mean \"head\"?\n  | project heads\n            ^"},
		{"stream without tenant", `from acme | where x`, "1:6: stream \"acme\": want tenant/stream\n  from acme | where x\n       ^"},
		{"bad since", `from acme/clicks since yesterday`, "1:24: expected a duration such as -1h or a quoted time, found \"yesterday\"\n  from acme/clicks since yesterday\n                         ^"},
		{"window kind", `from acme/clicks | window tumbeling 1m`, "1:27: unknown window kind \"tumbeling\"; did you mean \"tumbling\"?\n  from acme/clicks | window tumbeling 1m\n                            ^"},
		{"head 0", `from acme/clicks | head 0`, "1:25: expected a row count (a positive whole number), found number 0\n  from acme/clicks | head 0\n                          ^"},
		{"bad regex", `from acme/clicks | parse regex "(a"`, "1:32: regular expression: error parsing regexp: missing closing ): `(a`\n  from acme/clicks | parse regex \"(a\"\n                                 ^"},
		{"unterminated string", `from acme/clicks | where x == "abc`, "1:31: unterminated string\n  from acme/clicks | where x == \"abc\n                                ^"},
		{"duplicate column", `from acme/clicks | project a, a`, "1:31: column \"a\" given twice\n  from acme/clicks | project a, a\n                                ^"},
		{"sliding step", `from acme/clicks | window sliding 1m every 2m`, "1:35: a sliding window's step (2m0s) must not be longer than its size (1m0s)\n  from acme/clicks | window sliding 1m every 2m\n                                    ^"},
		{"missing pipe", `from acme/clicks where x > 1`, "1:18: unexpected \"where\"; operators are separated by '|'\n  from acme/clicks where x > 1\n                   ^"},
		{"nothing after pipe", `from acme/clicks |`, "1:19: expected an operator after '|', found the end of the query; operators: where, eval, project, stats, bin, window, sort, head, top, join, parse\n  from acme/clicks |\n                    ^"},
		{"join key missing on the right", `from acme/clicks | join (from acme/users | project plan) on principal`, "1:61: join key \"principal\" is not a field of the right side\n  from acme/clicks | join (from acme/users | project plan) on principal\n                                                              ^"},
		{"repeat is not callable", `from acme/clicks | where len(repeat("x", 10)) > 1`, "1:30: unknown function \"repeat\"; see docs/query.md for the functions expressions may call\n  from acme/clicks | where len(repeat(\"x\", 10)) > 1\n                               ^"},
		{"non-ASCII column", "from acme/clicks | stats count() by é | project ë", "1:49: unknown field \"ë\"; did you mean \"é\"?\n  from acme/clicks | stats count() by é | project ë\n                                                  ^"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.q, Limits{})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if err.Error() != tc.want {
				t.Fatalf("error:\n%s\nwant:\n%s", err.Error(), tc.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"from", "form", 1}, {"kitten", "sitting", 3}, {"where", "wher", 1}, {"é", "e", 1}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
