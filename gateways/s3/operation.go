package s3

import "net/http"

// Operation names the S3 action a request asks for, as AWS names it
// (GetObject, ListObjectsV2…), for the request series of the head: a
// bounded set, never a bucket or key. It follows serveHTTP's dispatch.
func (s *Server) Operation(r *http.Request) string {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return "Write" // refused: the head is read-only
	}
	q := r.URL.Query()
	for _, sub := range unsupported {
		if q.Has(sub) {
			return "Unsupported"
		}
	}
	bucket, key := s.route(r)
	switch {
	case bucket == "":
		return "ListBuckets"
	case key != "" && r.Method == http.MethodHead:
		return "HeadObject"
	case key != "":
		return "GetObject"
	case q.Has("location"):
		return "GetBucketLocation"
	case r.Method == http.MethodHead:
		return "HeadBucket"
	case q.Get("list-type") == "2":
		return "ListObjectsV2"
	default:
		return "ListObjects"
	}
}
