// Package atomicfile writes files so that readers and crashes see the old or the new
// content, never a part.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Write replaces the file at path atomically (see WriteIn).
func Write(p string, data []byte, perm fs.FileMode) error { return Replace(p, data, perm, true) }

// Replace replaces the file at path atomically, with the fsyncs optional (see ReplaceIn).
func Replace(p string, data []byte, perm fs.FileMode, sync bool) error {
	r, err := os.OpenRoot(filepath.Dir(p))
	if err != nil {
		return err
	}
	defer r.Close()
	return ReplaceIn(r, filepath.Base(p), data, perm, sync)
}

// WriteIn replaces rel inside r: a temporary file in the same directory, written, chmod'ed
// (the umask narrowed the mode given at creation), fsync'd, renamed over rel, and the
// directory fsync'd. The directory must exist.
func WriteIn(r *os.Root, rel string, data []byte, perm fs.FileMode) error {
	return ReplaceIn(r, rel, data, perm, true)
}

// ReplaceIn is WriteIn with the fsyncs optional. Without them the replacement is still whole
// for every reader and against a killed writer (the rename is atomic and the page cache
// outlives the process), but not against a crash of the machine.
func ReplaceIn(r *os.Root, rel string, data []byte, perm fs.FileMode, sync bool) error {
	dir := path.Dir(rel)
	tmp := tempName(rel)
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm.Perm())
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			r.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := r.Rename(tmp, rel); err != nil {
		return err
	}
	ok = true
	if !sync {
		return nil
	}
	return SyncDir(r, dir)
}

// tempMark sits between a file's name and the random part of its temporary twin's:
// ".<name>.tmp-<12 hex digits>". legacyMark is where links were made before (nodeexec,
// ".<name>.mcp-<12 hex digits>"), still recognised so that what those left is swept.
const (
	tempMark   = ".tmp-"
	legacyMark = ".mcp-"
)

// TempName is a new temporary twin's name for rel, in rel's directory: every temporary
// file or link mcp makes to put something at rel by a rename is named so, and IsTemp
// knows it by that name.
func TempName(rel string) string { return tempName(rel) }

func tempName(rel string) string {
	var rb [6]byte
	rand.Read(rb[:])
	return path.Join(path.Dir(rel), "."+path.Base(rel)+tempMark+hex.EncodeToString(rb[:]))
}

// IsTemp says whether name (a base name) is a temporary twin mcp makes (TempName): one a
// writer killed between making it and renaming it leaves behind, for whoever holds the
// directory's lock, or is the node's agent, to sweep. The pattern is exact — a dot, a
// name, the mark, 12 lowercase hex digits — so that no other file is taken for one.
func IsTemp(name string) bool {
	for _, mark := range []string{tempMark, legacyMark} {
		i := strings.LastIndex(name, mark)
		if !strings.HasPrefix(name, ".") || i < 2 {
			continue
		}
		rnd := name[i+len(mark):]
		if len(rnd) == 12 && strings.Trim(rnd, "0123456789abcdef") == "" {
			return true
		}
	}
	return false
}

// SyncDir fsyncs a directory inside r, making a rename or removal in it durable.
func SyncDir(r *os.Root, dir string) error {
	d, err := r.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
