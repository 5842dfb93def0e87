package nodeexec

import (
	"context"
	"strings"
)

// ParseCmdline splits a kernel command line (/proc/cmdline) into its arguments as the
// kernel does (lib/cmdline.c, next_arg): arguments are separated by blanks outside double
// quotes, and the quotes are dropped (`dyndbg="file x +p"` is the argument `dyndbg=file x
// +p`); everything after a lone `--` is init's, not the kernel's. The boot loader's own
// entries — BOOT_IMAGE= (GRUB) and initrd= (loaders that pass the initramfs on the command
// line) — say which files were booted, not how the kernel runs, and are left out: no
// configuration manages them, and a report of the node's arguments is shorter without.
func ParseCmdline(s string) []string {
	args := []string{}
	var cur strings.Builder
	quoted, in := false, false
	flush := func() bool {
		if !in {
			return false
		}
		a := cur.String()
		cur.Reset()
		in = false
		if a == "--" {
			return true
		}
		if !strings.HasPrefix(a, "BOOT_IMAGE=") && !strings.HasPrefix(a, "initrd=") {
			args = append(args, a)
		}
		return false
	}
	for _, c := range s {
		switch {
		case c == '"':
			quoted, in = !quoted, true
		case !quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			if flush() {
				return args
			}
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	flush()
	return args
}

// FormatCmdline is a kernel command line that ParseCmdline reads back as args: an argument
// with a blank has its value (or, without a value, itself) in double quotes, unless it is
// quoted already (as a config may write it: `dyndbg="file x +p"`).
func FormatCmdline(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " \t") && !strings.Contains(a, `"`) {
			if name, val, ok := strings.Cut(a, "="); ok {
				a = name + `="` + val + `"`
			} else {
				a = `"` + a + `"`
			}
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// ObserveHost asks h what the running boot runs: its kernel arguments (nil when the host
// cannot say) and OS image ("" when it cannot say, or the boot runs no container image).
func ObserveHost(ctx context.Context, h Host) (kernelArgs []string, osImage string, err error) {
	if kernelArgs, err = h.KernelArgs(ctx); err != nil {
		return nil, "", err
	}
	if osImage, err = h.BootedImage(ctx); err != nil {
		return nil, "", err
	}
	return kernelArgs, osImage, nil
}
