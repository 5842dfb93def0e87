package content_test

import (
	"bytes"
	"math/rand/v2"
	"net/url"
	"testing"

	"github.com/vincent-petithory/dataurl"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/ignition/content"
	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/testkit/anybytes"
)

// roundTrip renders a config holding data as a file's contents, in every spec render
// writes (large contents in the newest only: the parsers take seconds over MiBs), and
// checks what Ignition makes of it (roundTripIn).
func roundTrip(t *testing.T, data []byte) {
	t.Helper()
	for _, spec := range ignition.All() {
		if spec.Render && (len(data) <= 64<<10 || spec.Version == ignition.Newest().Version) {
			roundTripIn(t, spec, data)
		}
	}
}

// roundTripIn: Ignition's own parser of spec (as render validates) accepts the config,
// and the file's source decodes — parsed as a URL and printed again, as Ignition's fetcher
// does, then by the data-URL parser it uses — to exactly data; mcp's own reader of served
// configs gives data back too.
func roundTripIn(t *testing.T, spec ignition.Spec, data []byte) {
	t.Helper()
	r := &model.Rendered{Pool: "worker", IgnitionVersion: spec.Version,
		Files: []model.File{{Entry: model.Entry{Path: "/etc/x"}, Mode: 0o644, Contents: data}}}
	raw := content.Ignition(r)
	if rpt, err := spec.Parse(raw); err != nil {
		t.Fatalf("spec %s: Ignition refuses the config of %q: %v %s", spec.Version, short(data), err, rpt.String())
	}
	back, err := ignition.Read(raw)
	if err != nil || len(back.Files) != 1 || back.Files[0].Contents == nil {
		t.Fatalf("spec %s: read back %+v, %v", spec.Version, back, err)
	}
	if got, err := back.Files[0].Contents.Data(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back as %q (%v), want %q", short(got), err, short(data))
	}
	u, err := url.Parse(content.DataURL(data))
	if err != nil {
		t.Fatalf("%q: not a URL: %v", short(data), err)
	}
	d, err := dataurl.DecodeString(u.String())
	if err != nil || !bytes.Equal(d.Data, data) {
		t.Fatalf("%q decodes to %q (%v)", short(data), short(d.Data), err)
	}
}

func short(b []byte) []byte {
	if len(b) > 80 {
		return append(b[:80:80], "…"...)
	}
	return b
}

// TestEveryByteSequenceRoundTrips: the named classes (anybytes.Classes) and random
// contents survive render and Ignition's parsers byte for byte.
func TestEveryByteSequenceRoundTrips(t *testing.T) {
	for name, b := range anybytes.Classes() {
		t.Run(name, func(t *testing.T) { roundTrip(t, b) })
	}
	rng := rand.New(rand.NewPCG(30, 2))
	for range 300 {
		roundTrip(t, anybytes.Random(rng, 512))
	}
}

// FuzzDataURL: any bytes render to a config Ignition's parser takes and decode back to
// themselves. The seeds (testdata/fuzz/FuzzDataURL) are anybytes' small classes.
func FuzzDataURL(f *testing.F) {
	spec := ignition.Newest()
	f.Fuzz(func(t *testing.T, data []byte) { roundTripIn(t, spec, data) })
}
