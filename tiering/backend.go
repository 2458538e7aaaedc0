package tiering

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrNotExist is returned (wrapped) for a key the backend does not hold.
var ErrNotExist = errors.New("tiering: object does not exist")

// Backend is tier-2 storage: a flat namespace of immutable objects named
// by slash-separated keys. Like pebble's objstorage/remote.Storage it is a
// handful of methods, so that an S3 or HDFS backend is small.
type Backend interface {
	// Create starts an upload of key. Nothing is visible under key until
	// Finish returns; a finished object replaces any earlier one.
	Create(ctx context.Context, key string) (Writer, error)
	// Open opens a finished object.
	Open(ctx context.Context, key string) (Object, error)
	// Stat describes a finished object.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Delete removes the object and any unfinished upload of it; a
	// missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns the keys of finished objects starting with prefix, in
	// key order.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Writer is an upload in progress.
type Writer interface {
	io.Writer
	// Finish makes the object durable and visible under its key.
	Finish() error
	// Abort discards the upload; after Finish it does nothing.
	Abort() error
}

// Object is an open tier-2 object.
type Object interface {
	io.ReaderAt
	Size() int64
	Close() error
}

// ObjectInfo describes a finished object.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
}
