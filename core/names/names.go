// Package names holds the naming rules for tenants, streams and segments,
// shared by the engine, the ACL model and every head, so that a name valid
// in one place is valid in all.
package names

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every rule violation.
var ErrInvalid = errors.New("invalid name")

// Tenant checks the S3 bucket-name rules that tenant names follow, since
// a tenant is a bucket on the S3 head: 3–63 characters of lowercase
// letters, digits and '-', starting and ending with a letter or digit.
func Tenant(s string) error {
	ok := len(s) >= 3 && len(s) <= 63
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(s)-1
	}
	if !ok {
		return fmt.Errorf("%w: tenant %q: want %s", ErrInvalid, s, TenantRule)
	}
	return nil
}

// TenantRule and StreamRule state the rules in error messages and docs.
const (
	TenantRule = "3 to 63 characters of lowercase letters, digits and '-', starting and ending with a letter or digit (S3 bucket rules)"
	StreamRule = "1 to 200 characters of letters, digits, '.', '_' and '-', starting with a letter or digit"
)

// Stream checks stream names: 1–200 characters of letters, digits, '.',
// '_' and '-', starting with a letter or digit — so that a stream is never
// a hidden file ('.', '_' prefixes are skipped by Hadoop and Spark) and is
// safe as a directory name and an S3 key part.
func Stream(s string) error {
	ok := len(s) >= 1 && len(s) <= 200
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		ok = alnum || i > 0 && (c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return fmt.Errorf("%w: stream %q: want %s", ErrInvalid, s, StreamRule)
	}
	return nil
}

// Metadata checks user metadata keys and values.
func Metadata(m map[string]string) error {
	if len(m) > 64 {
		return fmt.Errorf("%w: at most 64 metadata entries", ErrInvalid)
	}
	for k, v := range m {
		if k == "" || len(k) > 128 || len(v) > 1024 {
			return fmt.Errorf("%w: metadata key %q: keys are 1 to 128 bytes, values at most 1024", ErrInvalid, k)
		}
	}
	return nil
}
