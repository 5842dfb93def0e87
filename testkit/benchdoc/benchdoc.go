// Package benchdoc writes benchmark results into sections of docs/benchmarks.md, each
// benchmark owning the part between its markers, with the machine described at the top.
package benchdoc

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// WriteSection replaces (or appends) the section between the markers for name in the
// markdown file, so that each benchmark keeps its own part of docs/benchmarks.md.
func WriteSection(path, name, body string) error {
	begin, end := "<!-- bench:"+name+" -->", "<!-- /bench:"+name+" -->"
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	doc := string(old)
	if doc == "" {
		doc = "# Benchmarks\n\nRun with `make bench`. Each section is rewritten by its benchmark.\n\n" + machine() + "\n"
	} else {
		doc = replaceMachine(doc)
	}
	section := begin + "\n" + body + end
	if i, j := strings.Index(doc, begin), strings.Index(doc, end); i >= 0 && j > i {
		doc = doc[:i] + section + doc[j+len(end):]
	} else {
		doc += "\n" + section + "\n"
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}

const machineBegin, machineEnd = "<!-- machine -->", "<!-- /machine -->"

func replaceMachine(doc string) string {
	i, j := strings.Index(doc, machineBegin), strings.Index(doc, machineEnd)
	if i < 0 || j < i {
		return doc
	}
	return doc[:i] + machine() + doc[j+len(machineEnd):]
}

func machine() string { return machineBegin + "\n" + Machine() + machineEnd }

// Machine describes this machine in one line: cores, CPU, memory, OS, kernel, Go.
func Machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
		if len(f) >= 2 {
			var kb int64
			fmt.Sscan(f[1], &kb)
			mem = fmt.Sprintf(", %.0f GiB memory", float64(kb)/1024/1024)
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", kernel " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil && strings.Contains(string(b), " hypervisor") {
		kernel += ", a virtual machine (system calls cost more than on bare metal)"
	}
	return fmt.Sprintf("Machine: %d cores (%s)%s, %s/%s%s, %s.\n",
		runtime.NumCPU(), cpu, mem, runtime.GOOS, runtime.GOARCH, kernel, runtime.Version())
}

// LoadAverage is the machine's 1-minute load average now ("?" when unknown), for a
// benchmark to say how busy the machine was while it ran.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// Usage is what a finished child process cost: its CPU time (user + system) and its peak
// resident set in KiB (Linux's rusage unit).
func Usage(ps *os.ProcessState) (cpu time.Duration, rssKiB int64) {
	cpu = ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		rssKiB = ru.Maxrss
	}
	return cpu, rssKiB
}

// Counts parses a benchmark's comma-separated list of positive numbers (sizes,
// parallelisms), exiting with a message naming flagName when one is not.
func Counts(list, flagName string) []int {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			log.Fatalf("%s: %q is not a positive number", flagName, s)
		}
		out = append(out, n)
	}
	return out
}
