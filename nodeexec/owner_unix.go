//go:build unix

package nodeexec

import (
	"io/fs"
	"syscall"
)

// fileOwner is the owner of a file Lstat described (ok false where the system does not say).
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
