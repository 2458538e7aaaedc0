package acl

import (
	"errors"
	"strings"
	"testing"
)

func TestParseResource(t *testing.T) {
	valid := map[string]Pattern{
		"*":                                {Kind: PatternAll},
		"acme":                             {Kind: PatternTenant, Tenant: "acme"},
		"a-1":                              {Kind: PatternTenant, Tenant: "a-1"},
		"acme/clicks":                      {Kind: PatternStream, Tenant: "acme", Name: "clicks"},
		"acme/Clicks.v2_x-y":               {Kind: PatternStream, Tenant: "acme", Name: "Clicks.v2_x-y"},
		"acme/0":                           {Kind: PatternStream, Tenant: "acme", Name: "0"},
		"acme/click*":                      {Kind: PatternGlob, Tenant: "acme", Name: "click*"},
		"acme/*":                           {Kind: PatternGlob, Tenant: "acme", Name: "*"},
		"acme/*.log":                       {Kind: PatternGlob, Tenant: "acme", Name: "*.log"},
		"acme/log-?":                       {Kind: PatternGlob, Tenant: "acme", Name: "log-?"},
		"acme/log-[0-9]":                   {Kind: PatternGlob, Tenant: "acme", Name: "log-[0-9]"},
		"acme/log-[^0-9]":                  {Kind: PatternGlob, Tenant: "acme", Name: "log-[^0-9]"},
		"acme/set:web":                     {Kind: PatternSet, Tenant: "acme", Name: "web"},
		"acme/set:Web.1":                   {Kind: PatternSet, Tenant: "acme", Name: "Web.1"},
		strings.Repeat("a", 63):            {Kind: PatternTenant, Tenant: strings.Repeat("a", 63)},
		"acme/" + strings.Repeat("s", 200): {Kind: PatternStream, Tenant: "acme", Name: strings.Repeat("s", 200)},
	}
	for in, want := range valid {
		t.Run("valid "+trim(in), func(t *testing.T) {
			got, err := ParseResource(in)
			if err != nil || got != want {
				t.Fatalf("ParseResource(%q) = %+v, %v; want %+v", in, got, err, want)
			}
			if got.String() != in {
				t.Fatalf("String() = %q, want %q", got.String(), in)
			}
		})
	}
	invalid := map[string]string{
		"empty":               "",
		"tenant too short":    "ab",
		"tenant too long":     strings.Repeat("a", 64),
		"tenant uppercase":    "Acme",
		"tenant underscore":   "ac_me",
		"tenant dot":          "ac.me",
		"tenant leading dash": "-acme",
		"tenant trailing":     "acme-",
		"tenant glob":         "ac*",
		"tenant star slash":   "*/clicks",
		"star suffix":         "**",
		"empty stream":        "acme/",
		"nested path":         "acme/a/b",
		"stream leading dot":  "acme/.hidden",
		"stream leading dash": "acme/-x",
		"stream space":        "acme/a b",
		"stream too long":     "acme/" + strings.Repeat("s", 201),
		"stream colon":        "acme/a:b",
		"empty set":           "acme/set:",
		"set bad char":        "acme/set:a b",
		"set glob":            "acme/set:web*",
		"set nested":          "acme/set:a/b",
		"empty old set":       "acme/group:",
		"old set glob":        "acme/group:web*",
		"glob unclosed class": "acme/log-[0-9",
		"glob empty class":    "acme/[]",
		"glob backslash":      `acme/a\*`,
		"glob slash":          "acme/a*/b",
		"glob bad char":       "acme/a*%",
		"glob too long":       "acme/*" + strings.Repeat("a", maxGlobLen),
		"leading slash":       "/acme",
		"control char":        "acme/a\x00",
		"unicode tenant":      "äcme",
		"unicode stream":      "acme/strëam",
	}
	for name, in := range invalid {
		t.Run("invalid "+name, func(t *testing.T) {
			p, err := ParseResource(in)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseResource(%q) = %+v, %v; want ErrInvalid", in, p, err)
			}
			if !strings.Contains(err.Error(), "want") && !strings.Contains(err.Error(), "cannot") &&
				!strings.Contains(err.Error(), "longer than") {
				t.Errorf("%q does not state the rule", err)
			}
		})
	}
}

func trim(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

func TestPatternMatches(t *testing.T) {
	cases := map[string]struct {
		pattern string
		r       Resource
		want    bool
	}{
		"star server":              {"*", server, true},
		"star stream":              {"*", acmeClicks, true},
		"tenant itself":            {"acme", acme, true},
		"tenant stream":            {"acme", acmeClicks, true},
		"tenant not server":        {"acme", server, false},
		"tenant not other":         {"acme", otherClicks, false},
		"stream exact":             {"acme/clicks", acmeClicks, true},
		"stream not tenant":        {"acme/clicks", acme, false},
		"stream case sensitive":    {"acme/Clicks", acmeClicks, false},
		"glob star not tenant":     {"acme/*", acme, false},
		"glob star any stream":     {"acme/*", acmeViews, true},
		"glob other tenant":        {"acme/*", otherClicks, false},
		"set not tenant":           {"acme/set:web", Resource{Tenant: "acme", Set: "web"}, false},
		"set match":                {"acme/set:web", acmeWeb, true},
		"old set spelling match":   {"acme/group:web", acmeWeb, true},
		"server with stream field": {"acme/clicks", Resource{Stream: "clicks"}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := ParseResource(c.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Matches(c.r); got != c.want {
				t.Fatalf("%q.Matches(%+v) = %v, want %v", c.pattern, c.r, got, c.want)
			}
		})
	}
	if (Pattern{}).Matches(acmeClicks) || (Pattern{}).Touches("acme") {
		t.Error("zero Pattern matches")
	}
}

// FuzzParseResource checks that parsing never panics, that every accepted
// string is canonical, and that no accepted pattern reaches outside its
// tenant or matches the server unless it is "*".
func FuzzParseResource(f *testing.F) {
	for _, s := range []string{
		"*", "acme", "acme/clicks", "acme/click*", "acme/set:web", "acme/group:web", "acme/[a-", "acme/[^]]",
		"acme/\\", "*/x", "acme//", "acme/group:", "acme/a/b", "a\x00b/c", "acme/[[:alpha:]]",
	} {
		f.Add(s, "acme", "clicks", "web")
	}
	f.Fuzz(func(t *testing.T, s, tenant, stream, group string) {
		p, err := ParseResource(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseResource(%q) error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		if p.String() != canonical(s) {
			t.Fatalf("ParseResource(%q).String() = %q, want %q", s, p.String(), canonical(s))
		}
		if again, err := ParseResource(p.String()); err != nil || again != p {
			t.Fatalf("re-parse of %q = %+v, %v", s, again, err)
		}
		for _, r := range []Resource{
			{Tenant: tenant, Stream: stream, Set: group},
			{Tenant: tenant},
			{},
			{Tenant: p.Tenant, Stream: stream, Set: group},
			{Tenant: p.Tenant, Stream: p.Name, Set: p.Name},
		} {
			m := p.Matches(r)
			if m && p.Kind != PatternAll && r.Tenant != p.Tenant {
				t.Fatalf("%q matches %+v in another tenant", s, r)
			}
			if m && r.Tenant == "" && p.Kind != PatternAll {
				t.Fatalf("%q matches the server", s)
			}
			if m && p.Kind != PatternAll && !p.Touches(r.Tenant) {
				t.Fatalf("%q matches %+v but does not touch its tenant", s, r)
			}
		}
	})
}

// canonical is s with the deprecated stream-set prefix "group:" spelt
// "set:", the one spelling ParseResource does not keep.
func canonical(s string) string {
	if tenant, rest, ok := strings.Cut(s, "/"); ok {
		if name, old := strings.CutPrefix(rest, "group:"); old {
			return tenant + "/set:" + name
		}
	}
	return s
}

// The deprecated "<tenant>/group:<set>" parses to the same pattern as
// "<tenant>/set:<set>" and prints as the latter.
func TestParseResourceDeprecatedSetPrefix(t *testing.T) {
	old, err := ParseResource("acme/group:web")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := ParseResource("acme/set:web")
	if err != nil {
		t.Fatal(err)
	}
	if old != cur || old.String() != "acme/set:web" {
		t.Fatalf("acme/group:web = %+v (%q), acme/set:web = %+v", old, old.String(), cur)
	}
}
