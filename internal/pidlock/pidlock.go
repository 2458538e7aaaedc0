// Package pidlock keeps two processes from using one directory: an
// exclusive flock on a file that holds the holder's pid, so that the one
// refused can say who holds it. The kernel releases the lock when its
// holder dies, however it dies, so a stale file never blocks a restart.
package pidlock

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrLocked is matched (errors.Is) by the error Acquire returns when
// another open file holds the lock.
var ErrLocked = errors.New("pidlock: locked")

// LockedError says who holds the lock.
type LockedError struct {
	Path string
	// PID is the holder's process id as it wrote it, 0 when it had not
	// written it yet.
	PID int
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("%s is locked by another process", e.Path)
	}
	return fmt.Sprintf("%s is locked by process %d", e.Path, e.PID)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is a held lock.
type Lock struct {
	f *os.File
}

// Acquire takes the lock on the file at path, creating the file (0600) if
// needed but not its directory, and writes this process's pid into it; a
// symlink at path is refused. It
// does not wait: a lock held elsewhere, by this process too, gives a
// *LockedError.
func Acquire(path string) (*Lock, error) {
	// Not through a symlink: whoever could plant one would have the
	// file it names truncated and overwritten with a pid.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &LockedError{Path: path, PID: readPID(f)}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The file may still hold the pid of a holder that died.
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write lock file: %w", err)
	}
	if _, err := f.WriteAt(pid, 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("write lock file: %w", err)
	}
	return &Lock{f: f}, nil
}

// Close empties the file, so that no pid is left naming a process that
// no longer holds it, and releases the lock. The file stays: removing it
// could let a process that opened it just before lock an unlinked file
// while a third creates a new one.
func (l *Lock) Close() error {
	terr := l.f.Truncate(0)
	return errors.Join(terr, l.f.Close())
}

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// readPID reads the holder's pid; 0 if it is not there (yet).
func readPID(f *os.File) int {
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
