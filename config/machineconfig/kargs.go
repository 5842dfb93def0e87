package machineconfig

// SplitKernelArgs splits one spec.kernelArguments entry into kernel arguments as the MCO's
// daemon does before it hands them to rpm-ostree, which is how the kernel itself reads its
// command line: whitespace separates arguments, except inside double quotes (which stay
// part of the argument, and cannot be escaped). "a=1 b" is two arguments; `x="p q"` one.
func SplitKernelArgs(entry string) []string {
	var out []string
	start, quoted := -1, false
	for i := 0; i < len(entry); i++ {
		c := entry[i]
		if isSpace(c) && !quoted {
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

// isSpace is whitespace in the C locale, as the kernel's command-line parser has it.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
