package client

import "testing"

// An API error names each thing once: the server's messages for the
// common codes begin with the code in words ("not found: tenant …"),
// which the code itself must not repeat.
func TestAPIErrorText(t *testing.T) {
	for name, tc := range map[string]struct {
		err  APIError
		want string
	}{
		"message repeats the code": {
			APIError{Status: 404, Code: "not_found", Message: `not found: tenant "nope"`, RequestID: "r1"},
			`silt: 404 not found: tenant "nope" (request r1)`,
		},
		"message repeats a two-word code": {
			APIError{Status: 409, Code: "already_exists", Message: `already exists: tenant "acme"`},
			`silt: 409 already exists: tenant "acme"`,
		},
		"message says the code in other words": {
			APIError{Status: 401, Code: "unauthenticated", Message: "not authenticated: unknown or revoked token"},
			"silt: 401 not authenticated: unknown or revoked token",
		},
		"acl's short invalid": {
			APIError{Status: 400, Code: "invalid_argument", Message: "invalid: root token: want 32-512 characters"},
			"silt: 400 invalid: root token: want 32-512 characters",
		},
		"message says something else": {
			APIError{Status: 413, Code: "too_large", Message: "event 1 is 2000000 bytes; max_event_bytes is 1048576", RequestID: "r2"},
			"silt: 413 too_large: event 1 is 2000000 bytes; max_event_bytes is 1048576 (request r2)",
		},
		"message only the code": {
			APIError{Status: 404, Code: "not_found", Message: "not found"},
			"silt: 404 not found",
		},
		"code alone": {
			APIError{Status: 401, Code: "unauthenticated"},
			"silt: 401 unauthenticated",
		},
		"no code, from a proxy": {
			APIError{Status: 502, Message: "Bad Gateway"},
			"silt: 502 Bad Gateway",
		},
		"in a stream, no status": {
			APIError{Code: "internal", Message: "internal error"},
			"silt: internal: internal error",
		},
		"a code that only begins the first word": {
			APIError{Status: 400, Code: "invalid", Message: "invalidated cursor"},
			"silt: 400 invalid: invalidated cursor",
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
