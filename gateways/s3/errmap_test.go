package s3

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
)

func TestMapErr(t *testing.T) {
	cases := map[string]struct {
		err    error
		t      target
		status int
		code   string
	}{
		"view permission":  {fmt.Errorf("x: %w", view.ErrPermission), targetKey, 403, "AccessDenied"},
		"acl denied":       {fmt.Errorf("x: %w", acl.ErrDenied), targetBucket, 403, "AccessDenied"},
		"missing key":      {fmt.Errorf("x: %w", view.ErrNotFound), targetKey, 404, "NoSuchKey"},
		"missing bucket":   {fmt.Errorf("x: %w", view.ErrNotFound), targetBucket, 404, "NoSuchBucket"},
		"directory as key": {view.ErrIsDir, targetKey, 404, "NoSuchKey"},
		"file as dir":      {view.ErrNotDir, targetKey, 404, "NoSuchKey"},
		"cancelled":        {context.Canceled, targetKey, 503, "SlowDown"},
		"head error":       {fmt.Errorf("x: %w", errSignature), targetKey, 403, "SignatureDoesNotMatch"},
		"anything else":    {errors.New("disk on fire"), targetKey, 500, "InternalError"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := mapErr(c.err, c.t)
			if e.Status != c.status || e.Code != c.code {
				t.Fatalf("mapErr(%v) = %d %s, want %d %s", c.err, e.Status, e.Code, c.status, c.code)
			}
		})
	}
}
