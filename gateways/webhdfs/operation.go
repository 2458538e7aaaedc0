package webhdfs

import (
	"net/http"
	"strings"
)

// Operation names a request's WebHDFS op (OPEN, LISTSTATUS…) for the
// request series of the head: an op Hadoop defines keeps its name, so
// that refused writes show as what they tried; anything else is OTHER,
// which keeps the label's values bounded whatever clients send.
func (s *Server) Operation(r *http.Request) string {
	if r.URL.Path == oauth2Path {
		return "OAUTH2_TOKEN"
	}
	op := strings.ToUpper(firstOp(r.URL.RawQuery))
	if getOps[op] || putOps[op] || postOps[op] || deleteOps[op] {
		return op
	}
	return "OTHER"
}
