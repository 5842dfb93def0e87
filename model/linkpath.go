package model

import (
	"errors"
	"path"
	"strings"
)

// Where an item lands once the symbolic links on its way are followed: one walk, used by
// the configuration's check against the config's own links (planner) and by the node
// executor against the node's links (nodeexec), so both read a path as the kernel does.

// maxLinkHops is how many links one walk follows before giving up, as Linux's ELOOP does.
const maxLinkHops = 40

// ErrLinkLoop is returned for a walk through more than 40 links: a loop, for the kernel.
var ErrLinkLoop = errors.New("too many levels of symbolic links")

// Readlink says whether the clean absolute path p is a symbolic link and, if so, its
// target. A path that does not exist is not a link.
type Readlink func(p string) (target string, isLink bool, err error)

// Landing is where a walk of a path ends and the links it followed on the way.
type Landing struct {
	Path string   // clean and absolute
	Via  []string // the links followed, in order, each at the path where it was met
}

// Land is where an item made at the clean absolute path p lands: every element but the last
// is followed through readlink's links (a relative target from the link's directory, an
// absolute one from the root, ".." above the root staying there), the last element is
// where the item is made and is not followed (a write replaces a link there, it does not
// go through it).
func Land(p string, readlink Readlink) (Landing, error) {
	dir, last := path.Split(p)
	l, err := Follow(dir, readlink)
	l.Path = path.Join(l.Path, last)
	return l, err
}

// Follow is the directory p names once every link on the way to it, its last element
// included, is followed.
func Follow(p string, readlink Readlink) (Landing, error) {
	var l Landing
	cur, todo := "/", strings.Split(p, "/")
	for len(todo) > 0 {
		elem := todo[0]
		todo = todo[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, elem)
		target, isLink, err := readlink(next)
		if err != nil {
			l.Path = next
			return l, err
		}
		if !isLink {
			cur = next
			continue
		}
		if l.Via = append(l.Via, next); len(l.Via) > maxLinkHops {
			l.Path = next
			return l, ErrLinkLoop
		}
		if path.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	l.Path = cur
	return l, nil
}

// InTree reports whether the clean absolute path p is dir or under it.
func InTree(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/") || dir == "/"
}

// Above reports whether the clean absolute path p is a directory dir is under: an item
// made at p in its place would move dir.
func Above(p, dir string) bool {
	return p != dir && InTree(dir, p)
}
