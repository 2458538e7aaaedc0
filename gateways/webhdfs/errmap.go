package webhdfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
)

// remoteError is a WebHDFS RemoteException. Hadoop's client rebuilds the
// exception from JavaClassName and fsspec from Exception, so both are
// always sent.
type remoteError struct {
	Status        int    `json:"-"`
	Exception     string `json:"exception"`
	JavaClassName string `json:"javaClassName"`
	Message       string `json:"message"`
}

func (e *remoteError) Error() string { return e.Exception + ": " + e.Message }

// The exception classes the head answers with, as HDFS's own
// ExceptionHandler pairs them with status codes.
func errNotFound(msg string) *remoteError {
	return &remoteError{http.StatusNotFound, "FileNotFoundException", "java.io.FileNotFoundException", msg}
}

func errAccess(msg string) *remoteError {
	return &remoteError{http.StatusForbidden, "AccessControlException", "org.apache.hadoop.security.AccessControlException", msg}
}

func errArgument(msg string) *remoteError {
	return &remoteError{http.StatusBadRequest, "IllegalArgumentException", "java.lang.IllegalArgumentException", msg}
}

// errEOF answers a data-URL read that starts past the end of the file, as
// a DataNode does (its DFSInputStream.seek throws EOFException, which HDFS
// sends as 403). Hadoop's client then asks the NameNode step again, which
// answers errRange.
func errEOF(offset, size int64) *remoteError {
	return &remoteError{http.StatusForbidden, "EOFException", "java.io.EOFException",
		fmt.Sprintf("Cannot seek after EOF: offset %d is past the file length %d", offset, size)}
}

// errRange answers an OPEN at or past the end of a non-empty file, as the
// NameNode does before it picks a DataNode (chooseDatanode's check).
func errRange(offset, size int64, raw string) *remoteError {
	return &remoteError{http.StatusForbidden, "IOException", "java.io.IOException",
		fmt.Sprintf("Offset=%d out of the range [0, %d); OPEN, path=%s", offset, size, raw)}
}

// errInvalidPath is DFSUtil.isValidName's refusal; InvalidPathException
// is a HadoopIllegalArgumentException, hence 400.
func errInvalidPath(raw string) *remoteError {
	return &remoteError{http.StatusBadRequest, "InvalidPathException", "org.apache.hadoop.fs.InvalidPathException",
		"Invalid path name " + raw}
}

// errHadoopArgument is HadoopIllegalArgumentException, which HDFS throws
// for a malformed xattr name.
func errHadoopArgument(msg string) *remoteError {
	return &remoteError{http.StatusBadRequest, "HadoopIllegalArgumentException", "org.apache.hadoop.HadoopIllegalArgumentException", msg}
}

// errXAttrNotFound is what HDFS answers when a named attribute is absent
// (an IOException, hence 403).
var errXAttrNotFound = &remoteError{http.StatusForbidden, "XAttrNotFoundException", "org.apache.hadoop.hdfs.protocol.XAttrNotFoundException",
	"At least one of the attributes provided was not found."}

// errNoOp answers a request without an op: HttpOpParam's default is NULL,
// which every method refuses with UnsupportedOperationException. Hadoop's
// client rethrows that class as it is.
var errNoOp = &remoteError{http.StatusBadRequest, "UnsupportedOperationException", "java.lang.UnsupportedOperationException",
	"op=NULL is not supported"}

// errAuthorization is the proxy-user refusal (ProxyUsers.authorize).
func errAuthorization(msg string) *remoteError {
	return &remoteError{http.StatusForbidden, "AuthorizationException", "org.apache.hadoop.security.authorize.AuthorizationException", msg}
}

func errAuth(msg string) *remoteError {
	return &remoteError{http.StatusUnauthorized, "SecurityException", "java.lang.SecurityException", msg}
}

// errWrite answers every mutating operation: the view has no mutators, so
// there is nothing to try.
var errWrite = errAccess("silt serves WebHDFS read-only; write through the native API")

// mapErr turns an error from the view, the acl or the head itself into the
// RemoteException to send; p is the path the request addressed.
// Unauthenticated comes before denied: a denial of Anonymous wraps both,
// and asking for credentials is the useful answer then.
func mapErr(err error, p string) *remoteError {
	var re *remoteError
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, acl.ErrUnauthenticated):
		return errAuth(err.Error())
	case errors.Is(err, view.ErrPermission), errors.Is(err, acl.ErrDenied):
		return errAccess("Permission denied: " + err.Error())
	case errors.Is(err, view.ErrIsDir):
		return errNotFound("Path is not a file: " + p)
	case errors.Is(err, view.ErrNotFound), errors.Is(err, view.ErrNotDir):
		return errNotFound("File does not exist: " + p)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &remoteError{http.StatusServiceUnavailable, "RetriableException", "org.apache.hadoop.ipc.RetriableException",
			"the request was cancelled or timed out; retry"}
	}
	return &remoteError{http.StatusInternalServerError, "IOException", "java.io.IOException", "internal error; see the server log"}
}

// writeErr sends e as Hadoop expects it: a non-empty JSON body, which its
// client needs to unwrap the exception instead of reporting the status
// line alone.
func writeErr(w http.ResponseWriter, e *remoteError) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	if e.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="silt"`)
	}
	w.WriteHeader(e.Status)
	json.NewEncoder(w).Encode(map[string]*remoteError{"RemoteException": e})
}
