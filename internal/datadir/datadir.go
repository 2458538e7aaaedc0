// Package datadir keeps silt's data directory private to the OS user silt
// runs as. Everything silt writes there — the catalog, tier-1 logs, the
// local tier 2, keys, tokens — is for that user alone: the S3 secrets, the
// NFS handle key and the root token in it would let any other local user
// act as silt's principals, and the events are the tenants' data.
//
// silt's own code creates directories 0700 and files 0600. Libraries create
// with 0777/0666 and leave the rest to the umask, so the server also sets
// a umask of 077 (RestrictUmask). Existing data directories are not chmod'ed
// behind the operator's back: Exposed finds what others can reach and Warn
// says how to fix it.
package datadir

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// Modes of everything silt creates in the data directory.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// othersMask is every permission bit of group and others: reading a file,
// listing or searching a directory, and writing either.
const othersMask fs.FileMode = 0o077

// RestrictUmask sets the process umask to 077 and returns the previous one.
// silt's own files are created with explicit private modes, but pebble and
// other libraries create theirs with 0666/0777 and rely on the umask; with
// the usual 022 the catalog would be readable by every local user.
func RestrictUmask() (old int) {
	return unix.Umask(0o077)
}

// Entry is a file or directory that grants group or others some access.
type Entry struct {
	Path string
	Mode fs.FileMode
}

// Exposed walks dir (dir included) and returns the entries whose mode
// grants any permission to group or others, in walk order. Symbolic links
// are reported by the mode of the link itself, which Linux ignores, so
// they are skipped; what they point to is not followed. A missing dir
// holds nothing exposed. The walk may run while silt adds and removes
// files: entries that vanish are skipped. It stops when ctx ends.
func Exposed(ctx context.Context, dir string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			// An entry silt cannot read is not one silt wrote; report
			// the rest rather than fail.
			if errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if info.Mode().Perm()&othersMask != 0 {
			out = append(out, Entry{Path: p, Mode: info.Mode()})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check permissions of %s: %w", dir, err)
	}
	return out, nil
}

// maxExamples bounds the paths one warning lists: a data dir created
// under umask 022 has every file exposed, and the fix is the same.
const maxExamples = 5

// Warn logs one warning for dir if it, or anything inside it, is open to
// group or others, with the paths, their modes and the command that fixes
// it. It changes nothing. what names the directory in the message (e.g.
// "data directory").
func Warn(ctx context.Context, log *zap.Logger, what, dir string) error {
	exposed, err := Exposed(ctx, dir)
	if err != nil || len(exposed) == 0 {
		return err
	}
	examples := make([]string, 0, maxExamples)
	for _, e := range exposed[:min(len(exposed), maxExamples)] {
		examples = append(examples, fmt.Sprintf("%s (%04o)", e.Path, e.Mode.Perm()))
	}
	log.Warn(what+" is readable by other OS users: it holds secrets and tenants' data; silt creates new files 0600 and directories 0700 but does not change existing ones",
		zap.String("path", dir),
		zap.String("mode", fmt.Sprintf("%04o", exposed[0].Mode.Perm())),
		zap.Int("exposed_entries", len(exposed)),
		zap.Strings("examples", examples),
		zap.String("fix", "chmod -R go-rwx "+dir))
	return nil
}
