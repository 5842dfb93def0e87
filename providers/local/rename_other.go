//go:build !linux

package local

import (
	"io/fs"
	"os"
)

// renameNoReplace renames old to new unless new exists. Without renameat2 the check and
// the rename are two steps; a directory is not renamed over a non-empty one all the same.
func renameNoReplace(old, new string) error {
	if _, err := os.Lstat(new); err == nil {
		return fs.ErrExist
	}
	return os.Rename(old, new)
}
