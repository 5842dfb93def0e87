package model

import (
	"slices"
	"strings"
	"testing"
)

// Entries of rpm-ostree's and the MCO's kernel argument lists are split as they split them.
func TestSplitKernelArgs(t *testing.T) {
	for in, want := range map[string][]string{
		"nosmt":                        {"nosmt"},
		"a=1 b":                        {"a=1", "b"},
		"  a\tb\n":                     {"a", "b"},
		`x="p q" y`:                    {`x="p q"`, "y"},
		`dyndbg="file foo.c +p" quiet`: {`dyndbg="file foo.c +p"`, "quiet"},
		"":                             nil,
	} {
		if got := SplitKernelArgs(in); !slices.Equal(got, want) {
			t.Errorf("SplitKernelArgs(%q) = %q, want %q", in, got, want)
		}
	}
}

// One kernel argument is what the kernel reads as one: a quoted value may hold a blank.
func TestKernelArgProblem(t *testing.T) {
	for in, want := range map[string]string{
		"nosmt": "", `foo="a b"`: "", `"a b"`: "", `a=""`: "", "mitigations=auto,nosmt": "",
		"": "is empty", " ": "blank outside double quotes", "a b": "more than one argument",
		"a\tb": "control character", "a\nb": "control character", "a\x7f": "control character",
		`q="a`: "unterminated double quote", `x="a b" "c`: "unterminated",
	} {
		got := KernelArgProblem(in)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("KernelArgProblem(%q) = %q, want …%s…", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"console=tty0 console=ttyS0,115200n8": "", "": "holds no kernel argument", "  ": "holds no kernel argument",
		`a x="b`: `has the argument "x=\"b"`, "a\x01b c": "control character",
	} {
		got := KernelArgEntryProblem(in)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("KernelArgEntryProblem(%q) = %q, want …%s…", in, got, want)
		}
	}
}

func TestOwnerNameProblem(t *testing.T) {
	for name, bad := range map[string]bool{
		"": false, "root": false, "core": false, "systemd-network": false, "user.name": false, "ops@corp": false, "a1": false,
		"a\nb": true, "a:b": true, "a/b": true, "a b": true, "-x": true, "1000": true, ".": true, "..": true,
		"x\x1b": true, strings.Repeat("u", 257): true,
	} {
		if got := OwnerNameProblem(name) != ""; got != bad {
			t.Errorf("OwnerNameProblem(%q) = %q, want refused %v", name, OwnerNameProblem(name), bad)
		}
	}
}
