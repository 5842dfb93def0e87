package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpfleet/mcp/internal/boundedfile"
)

// Swap replaces the file at p with data, whole for every reader and against a killed
// writer, mostly without allocating or freeing an inode: data is written in place into p's
// twin, ".NAME.swap" beside it, and the two names are exchanged in one renameat2(2)
// RENAME_EXCHANGE; the twin then holds the old content, to be overwritten next time. A
// file replaced thousands of times a minute then costs no inode churn — on ext4 without a
// journal every allocation skips the inodes freed in the last minute, so replacing by
// rename gets slower the more is replaced. There is no fsync (what Replace with sync false
// promises). Writers of one file must be serialised by the caller.
//
// The twin was p before the last exchange, and a reader may still have it open. So the
// twin is rewritten only under a write lease (fcntl F_SETLEASE), which the kernel grants
// only while no one else has the file open and which makes anyone who opens it meanwhile
// wait until the lease is given up — after the exchange, when the twin is p. A reader
// with a plain open and read therefore sees a version p had, whole. When the lease is
// refused (the twin is open, or the filesystem has no leases), or p does not exist yet, or
// the exchange is not supported, the content goes in as Replace would put it: a new file
// renamed over p.
func Swap(p string, data []byte, perm fs.FileMode) error {
	twin := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".swap")
	// Without blocking and regular only: a FIFO put where the twin goes would block an
	// open for writing until someone read it.
	f, _, err := boundedfile.Open(twin, os.O_WRONLY|os.O_CREATE|noFollow, perm)
	if err != nil {
		return err
	}
	defer f.Close() // after the exchange: closing gives the lease up
	if writeLease(f) != nil {
		return Replace(p, data, perm, false)
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.Write(data)
	}
	if err != nil {
		return err
	}
	switch err := exchange(twin, p); {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, errors.ErrUnsupported):
		return os.Rename(twin, p)
	default:
		return err
	}
}
