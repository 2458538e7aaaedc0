package api

// Tiering is what the API needs from the tier policy: backpressure for
// appends while tier 2 falls behind, and a stream's tiering state for
// describe. The API does not import the tiering package; the server wiring
// passes the Tierer in.
type Tiering interface {
	// Backpressure returns an error wrapping core.ErrUnavailable when the
	// stream's backlog for tier 2 is over its bound, so that appends get
	// 503 with Retry-After instead of filling tier 1 without limit.
	Backpressure(tenant, stream string) error
	// StreamStatus returns a JSON-encodable description of the stream's
	// tiering state.
	StreamStatus(tenant, stream string) (any, error)
}

// UseTiering connects the tier policy. Call it before serving.
func (s *Server) UseTiering(t Tiering) { s.tiering = t }
