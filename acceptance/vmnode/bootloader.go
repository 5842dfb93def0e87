package vmnode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Entry is one Boot Loader Specification entry ostree wrote on a node's disk.
type Entry struct {
	File    string // its name in /boot/loader/entries
	Title   string
	Version int // the highest boots by default; the next one is the rollback
	Options string
	Linux   string // paths relative to /boot
	Initrd  string
	Text    string // the whole entry: what a failed boot is remembered by
}

// Entries reads the boot entries from a stopped node's raw ext4 disk with debugfs (no
// mount, no loop device), highest version first. /boot/loader is a link to loader.0 or
// loader.1, which ostree swaps atomically; debugfs follows it. A disk whose machine lost
// power has its journal replayed first (e2fsck -E journal_only), as the kernel does when
// it mounts it: debugfs reads only what was checkpointed, and a power loss in the middle
// of a deployment can leave the checkpointed /boot between two states that the journal
// holds whole. (A boot loader that reads ext4 without the journal, as GRUB does, relies
// on ostree freezing /boot after each change, which checkpoints it.)
func Entries(disk string) ([]Entry, error) {
	if out, err := exec.Command("e2fsck", "-E", "journal_only", "-p", disk).CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 { // 1: replayed, corrected
			return nil, fmt.Errorf("e2fsck -E journal_only %s: %v: %s", disk, err, out)
		}
	}
	out, err := debugfs(disk, "ls /boot/loader/entries")
	if err != nil {
		return nil, err
	}
	var es []Entry
	for _, name := range strings.Fields(out) {
		if !strings.HasSuffix(name, ".conf") {
			continue
		}
		text, err := debugfs(disk, "cat /boot/loader/entries/"+name)
		if err != nil {
			return nil, err
		}
		e := Entry{File: name, Text: text}
		for _, line := range strings.Split(text, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
			v = strings.TrimSpace(v)
			switch k {
			case "title":
				e.Title = v
			case "version":
				e.Version, _ = strconv.Atoi(v)
			case "options":
				e.Options = v
			case "linux":
				e.Linux = v
			case "initrd":
				e.Initrd = v
			}
		}
		if e.Linux == "" || e.Options == "" {
			return nil, fmt.Errorf("boot entry %s on %s has no linux or options line:\n%s", name, disk, text)
		}
		es = append(es, e)
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("no boot entries in /boot/loader/entries on %s (debugfs said %q)", disk, out)
	}
	slices.SortFunc(es, func(a, b Entry) int { return b.Version - a.Version })
	return es, nil
}

// extract copies the entry's kernel and initramfs out of the disk into dir, once per
// path: ostree names them by the checksum of their content.
func extract(disk, dir string, e Entry) (kernel, initrd string, err error) {
	get := func(p string) (string, error) {
		out := filepath.Join(dir, strings.ReplaceAll(strings.Trim(p, "/"), "/", "_"))
		if st, err := os.Stat(out); err == nil && st.Size() > 0 {
			return out, nil
		}
		tmp := out + ".tmp"
		if _, err := debugfs(disk, fmt.Sprintf("dump /boot%s %s", p, tmp)); err != nil {
			return "", err
		}
		if st, err := os.Stat(tmp); err != nil || st.Size() == 0 {
			return "", fmt.Errorf("debugfs could not dump /boot%s from %s", p, disk)
		}
		return out, os.Rename(tmp, out)
	}
	if kernel, err = get(e.Linux); err != nil {
		return "", "", err
	}
	initrd, err = get(e.Initrd)
	return kernel, initrd, err
}

func debugfs(disk, request string) (string, error) {
	cmd := exec.Command("debugfs", "-R", request, disk)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("debugfs -R %q %s: %w: %s", request, disk, err, stderr.String())
	}
	// debugfs reports a missing path on stderr and exits 0.
	if s := stderr.String(); strings.Contains(s, "File not found") || strings.Contains(s, "not found by ext2_lookup") {
		return "", fmt.Errorf("debugfs -R %q %s: %s", request, disk, strings.TrimSpace(s))
	}
	return string(out), nil
}
