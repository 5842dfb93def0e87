// Command benchsize builds mcp and mcp-agent as `make build` does, unstripped and stripped
// (-ldflags '-s -w': no symbol table, no DWARF), prints their sizes and writes the "size"
// section of docs/benchmarks.md. It exits 1 when a stripped binary is over its target, so
// `make bench` fails on a dependency that makes a binary heavy (docs/decisions.md, "Binary
// size"). Sizes are in MB of 10⁶ bytes.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpfleet/mcp/testkit/benchdoc"
)

// binary is one command of the module and the most its stripped build may weigh.
type binary struct {
	name   string
	pkg    string
	ldflag string // the -ldflags of `make build`
	target float64
}

var binaries = []binary{
	{"mcp", "./cmd/mcp", "-X github.com/mcpfleet/mcp/engine.Version=0.1.0-dev", 60},
	{"mcp-agent", "./cmd/mcp-agent", "", 20},
}

func main() {
	out := flag.String("out", "docs/benchmarks.md", "markdown file to update (empty: none)")
	flag.StringVar(&binaries[0].ldflag, "mcp-ldflags", binaries[0].ldflag, "the -ldflags of mcp's build (make passes its LDFLAGS)")
	flag.Parse()
	gobin := os.Getenv("GO")
	if gobin == "" {
		gobin = "go"
	}
	dir, err := os.MkdirTemp("", "mcp-benchsize-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	var b strings.Builder
	fmt.Fprintf(&b, "## Binary size\n\nMeasured %s by `make bench` (scripts/benchsize): each binary built as `make build` builds it, "+
		"and again with `-ldflags '-s -w'` (no symbol table, no DWARF: what a release or a container image ships). "+
		"MB are 10⁶ bytes. docs/decisions.md (\"Binary size\") says what made them heavy and what keeps them small.\n\n", time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&b, "| binary | unstripped | stripped | target (stripped) | |\n|---|---|---|---|---|\n")
	over := false
	for _, bin := range binaries {
		full, err := build(gobin, dir, bin, false)
		if err != nil {
			log.Fatal(err)
		}
		stripped, err := build(gobin, dir, bin, true)
		if err != nil {
			log.Fatal(err)
		}
		verdict := "met"
		if stripped > bin.target {
			verdict, over = "NOT met", true
		}
		fmt.Printf("%-10s %6.1f MB, stripped %6.1f MB (target ≤ %.0f MB: %s)\n", bin.name, full, stripped, bin.target, verdict)
		fmt.Fprintf(&b, "| `%s` | %.1f MB | %.1f MB | ≤ %.0f MB | %s |\n", bin.name, full, stripped, bin.target, verdict)
	}
	b.WriteString("\n")
	if *out != "" {
		if err := benchdoc.WriteSection(*out, "size", b.String()); err != nil {
			log.Fatal(err)
		}
	}
	if over {
		fmt.Fprintln(os.Stderr, "benchsize: a stripped binary is over its target")
		os.Exit(1)
	}
}

// build builds bin into dir and returns its size in MB.
func build(gobin, dir string, bin binary, strip bool) (float64, error) {
	ldflags := bin.ldflag
	if strip {
		ldflags = strings.TrimSpace("-s -w " + ldflags)
	}
	path := filepath.Join(dir, bin.name)
	if strip {
		path += ".stripped"
	}
	args := []string{"build", "-o", path}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.Command(gobin, append(args, bin.pkg)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("go build %s: %w", bin.pkg, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return float64(fi.Size()) / 1e6, nil
}
