package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/silt-io/silt/acl"
)

// WebHDFS delegation tokens are listed and cancelled here for operators:
// the WebHDFS head itself cancels a token only for its owner or renewer,
// and only when shown the token, so a leaked token whose holder is gone
// could otherwise be ended only by deleting its principal.

// DelegationToken is a live WebHDFS delegation token as operators see
// it: never its password.
type DelegationToken struct {
	ID      int32     `json:"id"`
	Owner   string    `json:"owner"`
	Renewer string    `json:"renewer"`
	Issued  time.Time `json:"issued"`
	Expires time.Time `json:"expires"`  // unless renewed before
	MaxDate time.Time `json:"max_date"` // no renewal goes past it
}

// DelegationTokens is the WebHDFS head's token store.
type DelegationTokens interface {
	// ListDelegationTokens returns the live tokens by ID, of owner only
	// unless owner is "".
	ListDelegationTokens(owner string) []DelegationToken
	// CancelDelegationToken ends a token; an unknown id wraps
	// acl.ErrNotFound.
	CancelDelegationToken(id int32) error
}

// UseDelegationTokens connects the WebHDFS head's token store. Call it
// before serving.
func (s *Server) UseDelegationTokens(d DelegationTokens) { s.dtokens = d }

var errNoDelegationTokens = &httpError{
	status: http.StatusNotFound,
	code:   "not_found",
	msg:    "this server keeps no WebHDFS delegation tokens",
}

type delegationTokenList struct {
	Tokens []DelegationToken `json:"tokens"`
}

func (s *Server) listDelegationTokens(c *call) (op, error) {
	owner := c.r.URL.Query().Get("owner")
	return s.adminOp(func(*acl.Store) error {
		if s.dtokens == nil {
			return errNoDelegationTokens
		}
		writeJSON(c.w, http.StatusOK, delegationTokenList{Tokens: nonNil(s.dtokens.ListDelegationTokens(owner))})
		return nil
	})
}

func (s *Server) cancelDelegationToken(c *call) (op, error) {
	id, err := strconv.ParseInt(c.r.PathValue("id"), 10, 32)
	if err != nil || id < 1 {
		return op{}, badRequest("delegation token id %q: want the positive number that silt delegation-token list shows", c.r.PathValue("id"))
	}
	return s.adminOp(func(*acl.Store) error {
		if s.dtokens == nil {
			return errNoDelegationTokens
		}
		if err := s.dtokens.CancelDelegationToken(int32(id)); err != nil {
			return err
		}
		noContent(c.w)
		return nil
	})
}
