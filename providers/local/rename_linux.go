package local

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames old to new unless new exists (renameat2 RENAME_NOREPLACE): of
// two writers adding one node, one wins and the other is told. fs.ErrExist when new exists.
func renameNoReplace(old, new string) error {
	err := unix.Renameat2(unix.AT_FDCWD, old, unix.AT_FDCWD, new, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		return fs.ErrExist
	}
	return err
}
