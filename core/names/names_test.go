package names

import (
	"errors"
	"strings"
	"testing"
)

func TestRules(t *testing.T) {
	for name, tc := range map[string]struct {
		check func(string) error
		in    string
		ok    bool
	}{
		"tenant plain":        {Tenant, "acme", true},
		"tenant dash":         {Tenant, "acme-prod-1", true},
		"tenant too short":    {Tenant, "ab", false},
		"tenant too long":     {Tenant, strings.Repeat("a", 64), false},
		"tenant upper":        {Tenant, "Acme", false},
		"tenant leading dash": {Tenant, "-acme", false},
		"tenant trailing":     {Tenant, "acme-", false},
		"tenant dot":          {Tenant, "ac.me", false},
		"stream plain":        {Stream, "clicks", true},
		"stream mixed":        {Stream, "Clicks_v2.json-x", true},
		"stream empty":        {Stream, "", false},
		"stream underscore":   {Stream, "_manifest", false},
		"stream dot":          {Stream, ".hidden", false},
		"stream slash":        {Stream, "a/b", false},
		"stream space":        {Stream, "a b", false},
		"stream long":         {Stream, strings.Repeat("s", 201), false},
		"prefix plain":        {TierPrefix, "archive", true},
		"prefix nested":       {TierPrefix, "archive/2026/env=prod", true},
		"prefix empty":        {TierPrefix, "", false},
		"prefix leading /":    {TierPrefix, "/archive", false},
		"prefix trailing /":   {TierPrefix, "archive/", false},
		"prefix empty elem":   {TierPrefix, "a//b", false},
		"prefix dotdot":       {TierPrefix, "a/../b", false},
		"prefix dot":          {TierPrefix, "a/./b", false},
		"prefix hidden":       {TierPrefix, "a/.tmp-x", false},
		"prefix underscore":   {TierPrefix, "_archive", false},
		"prefix colon":        {TierPrefix, "a:b", false},
		"prefix space":        {TierPrefix, "a b", false},
		"prefix too deep":     {TierPrefix, "a/b/c/d/e/f/g/h/i", false},
		"prefix too long":     {TierPrefix, strings.Repeat("p", 201), false},
	} {
		err := tc.check(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %q → %v", name, tc.in, err)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: error does not wrap ErrInvalid", name)
		}
	}
}

// Before sits between s and every name below s.
func TestBefore(t *testing.T) {
	for _, tc := range []struct{ s, below, want string }{
		{"b", "az", "a\xff"},
		{"s10", "s0zzzz", "s1/\xff"},
		{"a\x00", "a", "a"},
		{"", "", ""},
	} {
		got := Before(tc.s)
		if got != tc.want || !(got < tc.s || tc.s == "") || !(tc.below <= got) {
			t.Errorf("Before(%q) = %q, want %q: above %q and below %q", tc.s, got, tc.want, tc.below, tc.s)
		}
	}
}
