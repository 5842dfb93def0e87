package model

import (
	"fmt"
	"strings"
	"unicode"
)

// What a node can take of the values a configuration gives it — a path, a kernel argument,
// an SSH key, an OS image — is the same whichever input gave the value (HCL blocks, Butane,
// an Ignition config, a MachineConfig, mcp import): each predicate here says why a value is
// not one ("" when it is), phrased to follow the value's name ("kernel argument "x" is
// empty"). Printing such values safely is the views' business; these refuse only what no
// node, kernel or Ignition can hold as the one thing it is meant to be.

// maxName and maxPath are Linux's NAME_MAX and PATH_MAX (less the NUL): a longer component
// or path is ENAMETOOLONG on every file system a node has.
const (
	maxName = 255
	maxPath = 4095
)

// NodePathProblem says why no node's file system can hold the absolute path p: a NUL byte
// (which ends a path in every system call), a component longer than 255 bytes or a path
// longer than 4095. Other characters, control characters too, are a Linux file name's
// and Ignition's to hold, and are taken.
func NodePathProblem(p string) string {
	if i := strings.IndexByte(p, 0); i >= 0 {
		return fmt.Sprintf("holds a NUL byte (at byte %d), which no file name can hold", i)
	}
	if len(p) > maxPath {
		return fmt.Sprintf("is %d bytes long, longer than a Linux path can be (%d)", len(p), maxPath)
	}
	for _, c := range strings.Split(p, "/") {
		if len(c) > maxName {
			return fmt.Sprintf("has a component of %d bytes, longer than a Linux file name can be (%d)", len(c), maxName)
		}
	}
	return ""
}

// KernelArgProblem says why a is not one kernel argument as the kernel reads its command
// line (lib/cmdline.c, next_arg), and rpm-ostree and the MCO split it: arguments are
// separated by blanks outside double quotes, so a blank is allowed only inside a quoted
// value (foo="a b", which the kernel, rpm-ostree and the MCO all take as one argument), and
// an unterminated quote would swallow the arguments after it. A control character has no
// place on a command line that boot loaders keep as one line of text.
func KernelArgProblem(a string) string {
	if a == "" {
		return "is empty: the kernel command line has no empty argument"
	}
	quoted, split := false, false
	for _, r := range a {
		switch {
		case r == '"':
			quoted = !quoted
		case r < 0x20 || r == 0x7f:
			return fmt.Sprintf("holds a control character (%q): a kernel command line is one line of printable text; give each argument as an entry of its own", string(r))
		case r == ' ' && !quoted:
			split = true
		}
	}
	switch {
	case quoted:
		return `has an unterminated double quote: the kernel would read the arguments after it into this one`
	case split:
		return `holds a blank outside double quotes, so the kernel would read it as more than one argument: give each argument as an entry of its own, or quote a value that holds a blank (foo="a b")`
	}
	return ""
}

// SplitKernelArgs splits one entry of a list of kernel arguments as rpm-ostree and the
// MCO's daemon split it before the kernel reads it: whitespace separates arguments, except
// inside double quotes (which stay part of the argument, and cannot be escaped). "a=1 b" is
// two arguments, `x="p q"` one. MachineConfigs' spec.kernelArguments and Butane's and
// Ignition's kernelArguments.shouldExist are such lists (Fedora CoreOS's docs group
// "console=tty0 console=ttyS0,115200n8" in one entry to keep their order); mcp's own
// kernel_args are one argument an entry.
func SplitKernelArgs(entry string) []string {
	var out []string
	start, quoted := -1, false
	for i := 0; i < len(entry); i++ {
		c := entry[i]
		if isBlank(c) && !quoted {
			if start >= 0 {
				out = append(out, entry[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
		if c == '"' {
			quoted = !quoted
		}
	}
	if start >= 0 {
		out = append(out, entry[start:])
	}
	return out
}

// isBlank is whitespace in the C locale, as the kernel's command-line parser has it.
func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// KernelArgEntryProblem says why an entry of such a list (SplitKernelArgs) cannot be
// split into kernel arguments: it holds none (empty or blank), or one of its arguments is
// not one (KernelArgProblem: an unterminated quote, a control character).
func KernelArgEntryProblem(entry string) string {
	args := SplitKernelArgs(entry)
	if len(args) == 0 {
		return "holds no kernel argument: drop the entry"
	}
	for _, a := range args {
		if why := KernelArgProblem(a); why != "" {
			return fmt.Sprintf("has the argument %q, which %s", a, why)
		}
	}
	return ""
}

// SSHKeyProblem says why k is not one line of an authorized_keys file: sshd reads the file
// a line at a time, so a key holding a line break would be two keys (or a key and junk).
func SSHKeyProblem(k string) string {
	const one = `an authorized key is one non-empty line, such as "ssh-ed25519 AAAA… user@host"`
	switch {
	case strings.TrimSpace(k) == "":
		return "is empty: " + one
	case strings.ContainsAny(k, "\r\n\x00"):
		return "holds a line break (or a NUL byte), so sshd would read it as more than one key: " + one
	}
	return ""
}

// OSImageProblem says why s cannot name an OS image (a container image reference, or an
// OSTree ref): it is empty, or holds a blank or a control character, which no reference
// holds.
func OSImageProblem(s string) string {
	if strings.TrimSpace(s) == "" {
		return "is empty: give the image reference, such as \"quay.io/fedora/fedora-coreos:stable\", or leave the setting out"
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Sprintf("holds %q, and an image reference holds no blank or control character", string(r))
		}
	}
	return ""
}

// OwnerNameProblem says why name cannot name a user or group in a node's /etc/passwd or
// /etc/group, where the agent (and Ignition, at first boot) looks it up, as systemd's
// relaxed rules for user and group names have it (systemd.io/USER_NAMES): "" names none
// and passes; ".", "..", a leading "-", only digits (chown and the tools read a number),
// a ":" (the files' separator), a "/", a blank or a control character, more than 256
// bytes cannot be one.
func OwnerNameProblem(name string) string {
	const rule = "a user or group name has no \":\", \"/\", blank or control character, does not start with \"-\" and is not a number"
	switch {
	case name == "":
		return ""
	case name == "." || name == "..":
		return "is not a name: " + rule
	case len(name) > 256:
		return "is longer than 256 bytes, more than a user or group name holds"
	case strings.HasPrefix(name, "-"):
		return "starts with \"-\": " + rule
	case strings.Trim(name, "0123456789") == "":
		return "is a number, which chown reads as an ID: mcp takes owners by name"
	}
	for _, r := range name {
		if r == ':' || r == '/' || unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Sprintf("holds %q: %s", string(r), rule)
		}
	}
	return ""
}
