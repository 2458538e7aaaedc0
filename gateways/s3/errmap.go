package s3

import (
	"context"
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
)

// apiError is an S3 error response.
type apiError struct {
	Status  int
	Code    string
	Message string
	// Elements some errors add to the body.
	Condition        string // PreconditionFailed: the header that failed
	RangeRequested   string // InvalidRange: the Range header as sent
	ActualObjectSize string // InvalidRange: the object's size
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newErr(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

// The S3 errors the head answers with besides those mapErr derives.
var (
	errWrite = newErr(http.StatusForbidden, "AccessDenied",
		"silt serves S3 read-only; write through the native API")
	errSignature = newErr(http.StatusForbidden, "SignatureDoesNotMatch",
		"The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	errAccessKey = newErr(http.StatusForbidden, "InvalidAccessKeyId",
		"The AWS Access Key Id you provided does not exist in our records.")
	errSkew = newErr(http.StatusForbidden, "RequestTimeTooSkewed",
		"The difference between the request time and the server's time is too large.")
	errSigV2 = newErr(http.StatusBadRequest, "InvalidRequest",
		"Only AWS Signature Version 4 (AWS4-HMAC-SHA256) is supported; configure the client for s3v4 signing")
	errExpired            = newErr(http.StatusForbidden, "AccessDenied", "Request has expired")
	errNotYetValid        = newErr(http.StatusForbidden, "AccessDenied", "Request is not valid yet")
	errAnonymousOverrides = newErr(http.StatusBadRequest, "InvalidRequest",
		"Request specific response headers cannot be used for anonymous GET requests.")
	errNotImplemented = newErr(http.StatusNotImplemented, "NotImplemented",
		"A header or query you provided implies functionality that is not implemented")
)

func errPreconditionOn(cond string) *apiError {
	e := newErr(http.StatusPreconditionFailed, "PreconditionFailed",
		"At least one of the pre-conditions you specified did not hold")
	e.Condition = cond
	return e
}

func errRangeNotSatisfiable(rng string, size int64) *apiError {
	e := newErr(http.StatusRequestedRangeNotSatisfiable, "InvalidRange", "The requested range is not satisfiable")
	e.RangeRequested, e.ActualObjectSize = rng, strconv.FormatInt(size, 10)
	return e
}

func errMalformedAuth(msg string) *apiError {
	return newErr(http.StatusBadRequest, "AuthorizationHeaderMalformed", msg)
}

func errQueryParams(msg string) *apiError {
	return newErr(http.StatusBadRequest, "AuthorizationQueryParametersError", msg)
}

func errInvalidArgument(msg string) *apiError {
	return newErr(http.StatusBadRequest, "InvalidArgument", msg)
}

// target says what a request addressed, choosing between NoSuchBucket and
// NoSuchKey for a missing entry.
type target int

const (
	targetBucket target = iota
	targetKey
)

// mapErr turns an error from the view, the acl or the head itself into
// the S3 error to send. Directories are not objects in S3, so ErrIsDir and
// ErrNotDir read as a missing key.
func mapErr(err error, t target) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, view.ErrPermission), errors.Is(err, acl.ErrDenied):
		return newErr(http.StatusForbidden, "AccessDenied", "Access Denied")
	case errors.Is(err, view.ErrNotFound), errors.Is(err, view.ErrIsDir), errors.Is(err, view.ErrNotDir):
		if t == targetBucket {
			return newErr(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
		}
		return newErr(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return newErr(http.StatusServiceUnavailable, "SlowDown", "The request was cancelled or timed out; retry")
	}
	return newErr(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
}

type errorBody struct {
	XMLName          xml.Name `xml:"Error"`
	Code             string
	Message          string
	Condition        string `xml:",omitempty"`
	RangeRequested   string `xml:",omitempty"`
	ActualObjectSize string `xml:",omitempty"`
	Resource         string `xml:",omitempty"`
	RequestID        string `xml:"RequestId"`
}

// writeErr sends e; HEAD responses carry no body, as in S3.
func writeErr(w http.ResponseWriter, r *http.Request, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/xml")
	w.WriteHeader(e.Status)
	if r.Method == http.MethodHead {
		return
	}
	body := errorBody{Code: e.Code, Message: e.Message, Condition: e.Condition, RangeRequested: e.RangeRequested,
		ActualObjectSize: e.ActualObjectSize, Resource: r.URL.Path, RequestID: h.Get("x-amz-request-id")}
	w.Write([]byte(xml.Header))
	xml.NewEncoder(w).Encode(body)
}
