package model

import "io/fs"

// Modes are given as Ignition and chmod(1) give them: the permission bits with setuid
// (04000), setgid (02000) and sticky (01000). Go's fs.FileMode keeps those three bits
// elsewhere (fs.ModeSetuid…), and os.Chmod and os.Root.Chmod read them only from there:
// fs.FileMode(0o4755) is 0755 to them. Every conversion goes through FileMode and UnixMode.

// ModeBits are the bits of an fs.FileMode that FileMode sets: what a mode manages.
const ModeBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// FileMode is the mode m (as configs give it) as Go's fs.FileMode.
func FileMode(m int) fs.FileMode {
	mode := fs.FileMode(m) & fs.ModePerm
	if m&0o4000 != 0 {
		mode |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// UnixMode is the mode m has on Unix (chmod's number), as configs give it.
func UnixMode(m fs.FileMode) int {
	n := int(m & fs.ModePerm)
	if m&fs.ModeSetuid != 0 {
		n |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		n |= 0o1000
	}
	return n
}
