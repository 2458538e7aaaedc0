package wal

// Backend is where the log's frames are kept. Positions are byte positions
// in the log as a whole, from 0 at its creation: a frame's position never
// changes, whichever unit (file, object) holds it.
//
// The local-files backend (Files) keeps the log in files named by their
// first position. The object backend (core/wal/objwal) stores one object
// per Write, named by its position and writer epoch, with the same
// framing; a Write there returns once the object is put and the new end
// is recorded under the writer's epoch, and truncation deletes objects.
// The contract both keep is core/wal/waltest.
type Backend interface {
	// Recover reads the log from position from on, calling fn with each
	// valid frame's position and body in order, and makes the end of the
	// valid frames the position of the next Write. A torn tail (frames of
	// a write that never completed) is discarded and reported in the
	// result; damage anywhere else is an error. fn's body is only valid
	// until it returns.
	Recover(from uint64, fn func(pos uint64, body []byte) error) (Recovery, error)
	// Write stores whole frames (n bytes in bufs) at pos, which is the end
	// of the log, and returns once they are durable. After an error the
	// backend discards whatever part of the write was stored before it
	// accepts the next one at the same position.
	Write(pos uint64, bufs [][]byte, n int64) error
	// TruncateBefore discards the units all of whose frames lie below pos.
	TruncateBefore(pos uint64) error
	// SaveCheckpoint durably replaces the checkpoint record;
	// LoadCheckpoint returns it, or nil when there is none.
	SaveCheckpoint(data []byte) error
	LoadCheckpoint() ([]byte, error)
	Close() error
}

// Recovery describes what Recover found.
type Recovery struct {
	// Start is where reading started, End the position after the last
	// valid frame.
	Start, End uint64
	Frames     int
	// TornBytes were discarded from the tail: a write that had not
	// completed (and so was never acknowledged) when the process stopped.
	TornBytes int64
}
