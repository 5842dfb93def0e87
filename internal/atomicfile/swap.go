package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Swap replaces the file at p with data, whole for every reader and against a killed
// writer, without allocating or freeing an inode: data is written in place into p's twin,
// ".NAME.swap" beside it, and the two names are exchanged in one renameat2(2)
// RENAME_EXCHANGE; the twin then holds the old content, to be overwritten next time. A
// file replaced thousands of times a minute costs no inode churn — on ext4 without a
// journal every allocation skips the inodes freed in the last seconds, so replacing by
// rename gets slower the more is replaced. There is no fsync (what Replace with sync false
// promises). The twin is written in place, so writers of one file must be serialised by
// the caller. Where the exchange is not supported, or p does not exist yet, the twin is
// renamed over p instead.
//
// The twin was p before the last exchange, and a reader may still be reading it: Swap takes
// an exclusive flock(2) on it before it truncates it, so readers must read p with
// boundedfile.ReadSwapped (a shared lock, then a check that the inode read is still p's).
func Swap(p string, data []byte, perm fs.FileMode) error {
	twin := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".swap")
	f, err := os.OpenFile(twin, os.O_WRONLY|os.O_CREATE|noFollow, perm)
	if err != nil {
		return err
	}
	err = flockEx(f)
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil { // and the lock with it, before the exchange
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := exchange(twin, p); err == nil || !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	return os.Rename(twin, p)
}
