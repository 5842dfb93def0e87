// Package cmdhelp prints a command's help the way Terraform's commands print theirs: a
// usage line with the arguments, what the command does, its options in groups, its exit
// codes and an example — shared by mcp's commands and the mcp-agent binary. It prints what
// it is given and the flags a FlagSet defines; it decides nothing.
package cmdhelp

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Width is the column help text is wrapped at.
const Width = 80

// Help is one command's help.
type Help struct {
	// Usage is the synopsis after "Usage: ", with the arguments: "mcp [global options]
	// plan [options]".
	Usage string
	// Text says what the command does and what its arguments are: paragraphs separated by
	// blank lines, wrapped at Width. A line that starts with a space is printed as it is.
	Text string
	// Groups order the command's options under titles; an option in no group is listed
	// under "Other options", so that none is left out.
	Groups []Group
	// Exit are the exit codes, one "CODE  meaning" a line.
	Exit []string
	// Examples are command lines, each with an optional comment after "  # ".
	Examples []string
}

// Group is options under a title ("Plan options").
type Group struct {
	Title string
	Flags []string
}

// Placeholders name the value an option takes, by option name ("out": "FILE"); an option
// not named here takes its type's (N, DURATION, VALUE; none for a bool).
var Placeholders = map[string]string{
	"out": "FILE", "var": "'NAME=VALUE'", "var-file": "FILE", "cluster": "NAME", "approve-stage": "NAME", "target": "ADDRESS", "exclude": "node.NAME",
	"lock-timeout": "DURATION", "fleet": "DIR", "listen": "ADDR", "url": "URL", "ca": "FILE", "token-file": "FILE", "server-ca": "FILE", "server-token-file": "FILE",
	"tls-cert": "FILE", "tls-key": "FILE", "state": "FILE", "first-boot-agent": "PATH", "root": "DIR",
	"server": "URL", "desired": "NAME", "kubeconfig": "FILE", "node": "NAME", "namespace": "NAME",
	"nodes": "POOL=N,…", "zones": "A,B,…", "os-image": "IMAGE", "pool": "POOL", "boot-image": "IMAGE", "zone": "ZONE",
	"o": "FORMAT", "output": "FORMAT", "host": "KIND", "allow": "PATHS", "os-chroot": "DIR", "os-tool": "TOOL", "cmdline": "FILE",
	"booted-image": "IMAGE", "boot-id-file": "FILE", "parallelism": "N",
}

// Write prints the help, with the options fs defines.
func (h *Help) Write(w io.Writer, fs *flag.FlagSet) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n", h.Usage)
	writeText(&b, h.Text, "  ")
	if fs != nil {
		writeOptions(&b, h.Groups, fs)
	}
	if len(h.Exit) > 0 {
		b.WriteString("Exit codes:\n\n")
		for _, e := range h.Exit {
			code, what, _ := strings.Cut(e, "  ")
			b.WriteString(hanging("  "+code, strings.TrimSpace(what), 6))
		}
	}
	if len(h.Examples) > 0 {
		if len(h.Exit) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("Examples:\n\n")
		for _, e := range h.Examples {
			cmd, comment, has := strings.Cut(e, "  # ")
			if has {
				b.WriteString(wrap(comment, "  # ", "  # "))
			}
			b.WriteString("  " + cmd + "\n")
			if has {
				b.WriteString("\n")
			}
		}
	}
	_, err := io.WriteString(w, strings.TrimRight(b.String(), "\n")+"\n")
	return err
}

// writeText writes paragraphs wrapped, each line indented.
func writeText(b *strings.Builder, text, indent string) {
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if strings.HasPrefix(para, " ") {
			for _, l := range strings.Split(para, "\n") {
				b.WriteString(indent + l + "\n")
			}
		} else {
			b.WriteString(wrap(strings.Join(strings.Fields(para), " "), indent, indent))
		}
		b.WriteString("\n")
	}
}

func writeOptions(b *strings.Builder, groups []Group, fs *flag.FlagSet) {
	seen := map[string]bool{}
	all := []Group{}
	for _, g := range groups {
		var names []string
		for _, n := range g.Flags {
			if fs.Lookup(n) != nil && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			all = append(all, Group{g.Title, names})
		}
	}
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		if !seen[f.Name] {
			rest = append(rest, f.Name)
		}
	})
	if len(rest) > 0 {
		title := "Other options"
		if len(all) == 0 {
			title = "Options"
		}
		all = append(all, Group{title, rest})
	}
	for _, g := range all {
		fmt.Fprintf(b, "%s:\n\n", g.Title)
		for _, n := range g.Flags {
			f := fs.Lookup(n)
			b.WriteString(hanging("  "+Flag(f), Describe(f), 24))
		}
		b.WriteString("\n")
	}
}

// Flag is how an option is written: "-out=FILE", "-json".
func Flag(f *flag.Flag) string {
	if isBool(f) {
		if f.DefValue == "true" {
			return "-" + f.Name + "=false"
		}
		return "-" + f.Name
	}
	p := Placeholders[f.Name]
	if p == "" {
		switch name, _ := flag.UnquoteUsage(f); name {
		case "int":
			p = "N"
		case "duration":
			p = "DURATION"
		default:
			p = "VALUE"
		}
	}
	return "-" + f.Name + "=" + p
}

func isBool(f *flag.Flag) bool {
	bf, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && bf.IsBoolFlag()
}

// Describe is the option's usage, a capital first and a full stop last, with its default
// when it has one worth saying.
func Describe(f *flag.Flag) string {
	_, u := flag.UnquoteUsage(f)
	if u != "" {
		u = strings.ToUpper(u[:1]) + u[1:]
	}
	if !strings.HasSuffix(u, ".") {
		u += "."
	}
	if isBool(f) {
		return u // a bool's default is in how it is written: -json, -lock=false
	}
	if d := f.DefValue; !slices.Contains([]string{"", "0", "false", "0s", "[]"}, d) {
		u += fmt.Sprintf(" Default: %s.", d)
	}
	return u
}

// hanging writes term, then text wrapped in a column at col (on the next line when term
// is too wide for it).
func hanging(term, text string, col int) string {
	pad := strings.Repeat(" ", col)
	if len(term)+2 > col {
		return term + "\n" + wrap(text, pad, pad)
	}
	return wrap(text, term+strings.Repeat(" ", col-len(term)), pad)
}

// wrap wraps text at Width, its first line after first and the others after rest.
func wrap(text, first, rest string) string {
	var b strings.Builder
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > Width {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}
