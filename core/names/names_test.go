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
