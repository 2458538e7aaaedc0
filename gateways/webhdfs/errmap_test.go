package webhdfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
)

func TestMapErr(t *testing.T) {
	cases := map[string]struct {
		err       error
		status    int
		exception string
		class     string
	}{
		"view permission": {fmt.Errorf("x: %w", view.ErrPermission), 403, "AccessControlException", "org.apache.hadoop.security.AccessControlException"},
		"acl denied":      {fmt.Errorf("x: %w", acl.ErrDenied), 403, "AccessControlException", "org.apache.hadoop.security.AccessControlException"},
		"anonymous":       {fmt.Errorf("%w: %w: %w", view.ErrPermission, acl.ErrDenied, acl.ErrUnauthenticated), 401, "SecurityException", "java.lang.SecurityException"},
		"bad token":       {fmt.Errorf("x: %w", acl.ErrUnauthenticated), 401, "SecurityException", "java.lang.SecurityException"},
		"missing":         {fmt.Errorf("x: %w", view.ErrNotFound), 404, "FileNotFoundException", "java.io.FileNotFoundException"},
		"not a dir":       {view.ErrNotDir, 404, "FileNotFoundException", "java.io.FileNotFoundException"},
		"is a dir":        {view.ErrIsDir, 404, "FileNotFoundException", "java.io.FileNotFoundException"},
		"write":           {errWrite, 403, "AccessControlException", "org.apache.hadoop.security.AccessControlException"},
		"argument":        {fmt.Errorf("x: %w", errArgument("bad")), 400, "IllegalArgumentException", "java.lang.IllegalArgumentException"},
		"cancelled":       {context.Canceled, 503, "RetriableException", "org.apache.hadoop.ipc.RetriableException"},
		// HDFS's ExceptionHandler: IOExceptions are 403, IllegalArgument
		// and UnsupportedOperation ones 400, whatever their class.
		"open range":      {errRange(40, 39, "/p"), 403, "IOException", "java.io.IOException"},
		"invalid path":    {errInvalidPath("/a//b"), 400, "InvalidPathException", "org.apache.hadoop.fs.InvalidPathException"},
		"xattr name":      {errHadoopArgument("bad"), 400, "HadoopIllegalArgumentException", "org.apache.hadoop.HadoopIllegalArgumentException"},
		"xattr not found": {errXAttrNotFound, 403, "XAttrNotFoundException", "org.apache.hadoop.hdfs.protocol.XAttrNotFoundException"},
		"no op":           {errNoOp, 400, "UnsupportedOperationException", "java.lang.UnsupportedOperationException"},
		"proxy user":      {errAuthorization("no"), 403, "AuthorizationException", "org.apache.hadoop.security.authorize.AuthorizationException"},
		"anything else":   {errors.New("disk on fire"), 500, "IOException", "java.io.IOException"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := mapErr(c.err, "/p")
			if e.Status != c.status || e.Exception != c.exception || e.JavaClassName != c.class || e.Message == "" {
				t.Fatalf("mapErr(%v) = %+v, want %d %s %s", c.err, e, c.status, c.exception, c.class)
			}
			rec := httptest.NewRecorder()
			writeErr(rec, e)
			var body struct{ RemoteException remoteError }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if rec.Code != c.status || rec.Header().Get("Content-Type") != "application/json" ||
				body.RemoteException.Exception != c.exception || body.RemoteException.JavaClassName != c.class {
				t.Fatalf("writeErr: %d %q %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
		})
	}
}
