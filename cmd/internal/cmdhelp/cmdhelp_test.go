package cmdhelp

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The help reads as Terraform's: usage, text wrapped at 80 columns, options in their
// groups (any left out of every group under "Other options"), exit codes, examples.
func TestWrite(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("out", "", "save the plan to this file")
	fs.Bool("json", false, "print JSON")
	fs.Bool("lock", true, "do not take the state lock")
	fs.Duration("wait", 5*time.Second, "how long to wait for a reply from a server that is slow to answer requests")
	fs.Int("n", 0, "how many")
	h := &Help{Usage: "mcp [global options] x [options] ARG",
		Text:     "Does x to ARG, and explains at length what x does, so that the paragraph must wrap somewhere near the eightieth column.\n\n  kept as it is",
		Groups:   []Group{{Title: "X options", Flags: []string{"out", "json", "nope"}}},
		Exit:     []string{"0  Done.", "1  An error."},
		Examples: []string{"mcp x -out=p ARG  # save it"}}
	var b bytes.Buffer
	if err := h.Write(&b, fs); err != nil {
		t.Fatal(err)
	}
	want := `Usage: mcp [global options] x [options] ARG

  Does x to ARG, and explains at length what x does, so that the paragraph must
  wrap somewhere near the eightieth column.

    kept as it is

X options:

  -out=FILE             Save the plan to this file.
  -json                 Print JSON.

Other options:

  -lock=false           Do not take the state lock.
  -n=N                  How many.
  -wait=DURATION        How long to wait for a reply from a server that is slow
                        to answer requests. Default: 5s.

Exit codes:

  0   Done.
  1   An error.

Examples:

  # save it
  mcp x -out=p ARG
`
	if d := cmp.Diff(want, b.String()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
