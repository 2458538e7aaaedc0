package webhdfs

import (
	"net/http/httptest"
	"testing"
)

func TestOperation(t *testing.T) {
	s := &Server{}
	for name, tc := range map[string]struct {
		method, target, want string
	}{
		"open":             {"GET", "/webhdfs/v1/acme/s/segment=0/x?op=OPEN", "OPEN"},
		"lower case":       {"GET", "/webhdfs/v1/acme?op=liststatus", "LISTSTATUS"},
		"refused write":    {"PUT", "/webhdfs/v1/acme/x?op=CREATE", "CREATE"},
		"token renew":      {"PUT", "/webhdfs/v1/?op=RENEWDELEGATIONTOKEN&token=x", "RENEWDELEGATIONTOKEN"},
		"unknown op":       {"GET", "/webhdfs/v1/acme?op=MADEUP-" + "acme", "OTHER"},
		"no op":            {"GET", "/webhdfs/v1/acme", "OTHER"},
		"oauth2 token":     {"POST", oauth2Path, "OAUTH2_TOKEN"},
		"outside the tree": {"GET", "/elsewhere?op=OPEN", "OPEN"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := s.Operation(httptest.NewRequest(tc.method, tc.target, nil)); got != tc.want {
				t.Fatalf("Operation = %q, want %q", got, tc.want)
			}
		})
	}
}
