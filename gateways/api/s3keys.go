package api

import (
	"net/http"

	"github.com/silt-io/silt/acl"
)

// S3 access keys are managed here, next to tokens, because the S3 head has
// no management surface of its own: it only verifies signatures.

type s3KeyJSON struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
	Principal       string `json:"principal"`
}

type s3KeyList struct {
	Keys []acl.S3KeyInfo `json:"keys"`
}

func (s *Server) issueS3Key(c *call) (op, error) {
	name := c.r.PathValue("principal")
	return s.adminOp(func(a *acl.Store) error {
		id, secret, err := a.IssueS3Key(name)
		if err != nil {
			return err
		}
		c.w.Header().Set("Cache-Control", "no-store")
		writeJSON(c.w, http.StatusCreated, s3KeyJSON{AccessKeyID: id, SecretAccessKey: secret, Principal: name})
		return nil
	})
}

func (s *Server) listS3Keys(c *call) (op, error) {
	name := c.r.PathValue("principal")
	return s.adminOp(func(a *acl.Store) error {
		keys, err := a.ListS3Keys(name)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, s3KeyList{Keys: nonNil(keys)})
		return nil
	})
}

func (s *Server) revokeS3Key(c *call) (op, error) {
	id := c.r.PathValue("key")
	return s.adminOp(func(a *acl.Store) error {
		if err := a.RevokeS3Key(id); err != nil {
			return err
		}
		noContent(c.w)
		return nil
	})
}
