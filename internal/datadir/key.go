package datadir

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeySize is the length of every key file silt keeps: 32 random bytes, an
// AES-256 or HMAC-SHA-256 key.
const KeySize = 32

// LoadOrCreateKey returns the key in path, creating it on first use: 32
// bytes from crypto/rand, written 0600 through a synced temp file and a
// rename, in a directory created 0700. created reports whether the key is
// new, so that a caller who finds data sealed with another key can say
// that the right one is missing rather than wrong.
func LoadOrCreateKey(path string) (key []byte, created bool, err error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) != KeySize {
			return nil, false, fmt.Errorf("key file %s holds %d bytes, want %d: restore it from a backup", path, len(b), KeySize)
		}
		return b, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("read key file: %w", err)
	}
	key = make([]byte, KeySize)
	rand.Read(key)
	if err := os.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return nil, false, fmt.Errorf("create key dir: %w", err)
	}
	if err := WriteFileAtomic(path, key); err != nil {
		return nil, false, fmt.Errorf("write key file: %w", err)
	}
	return key, true, nil
}

// WriteFileAtomic replaces path with data, mode 0600: a crash leaves the
// old content or the new, never a prefix (temp file, fsync, rename, fsync
// of the directory). The temp file is created exclusively, so a leftover
// from a crash, whatever its mode, is replaced rather than reused.
func WriteFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
