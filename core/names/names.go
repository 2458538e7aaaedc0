// Package names holds the naming rules for tenants, streams and segments,
// shared by the engine, the ACL model and every head, so that a name valid
// in one place is valid in all.
package names

import (
	"errors"
	"fmt"
	"strings"
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

// TierPrefixRule states the rule for a stream's tier prefix.
const TierPrefixRule = "1 to 8 '/'-separated elements, 200 characters at most, each of letters, digits, '.', '_', '-' and '=', starting with a letter or digit; no leading or trailing '/'"

// TierPrefix checks a stream's tier-2 prefix: a relative path inside the
// backend's target (bucket prefix, HDFS directory, fs directory). Every
// element starts with a letter or digit, so that none is "." or "..", a
// hidden name that Hadoop and Spark skip ('.', '_'), or a backend's temp
// file; '=' is allowed for Hive-style partitions (env=prod).
func TierPrefix(s string) error {
	elems := strings.Split(s, "/")
	ok := len(s) >= 1 && len(s) <= 200 && len(elems) <= 8
	for _, e := range elems {
		for i := 0; ok && i < len(e); i++ {
			c := e[i]
			alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
			ok = alnum || i > 0 && (c == '.' || c == '_' || c == '-' || c == '=')
		}
		ok = ok && e != ""
	}
	if !ok {
		return fmt.Errorf("%w: tier prefix %q: want %s", ErrInvalid, s, TierPrefixRule)
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

// Before returns a string below s and above every valid name below s: the
// last byte decremented and followed by 0xff, which no valid name holds. A
// listing that takes an exclusive "after" starts at s when given it.
func Before(s string) string {
	if s == "" {
		return ""
	}
	last := s[len(s)-1]
	if last == 0 {
		return s[:len(s)-1]
	}
	return s[:len(s)-1] + string([]byte{last - 1, 0xff})
}
