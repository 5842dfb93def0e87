package butane

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/ignition"
)

func doc(variant, version string) string {
	s := fmt.Sprintf("variant: %s\nversion: %s\n", variant, version)
	if variant == "openshift" {
		s += "metadata:\n  name: x\n  labels:\n    machineconfiguration.openshift.io/role: worker\n"
	}
	return s + "storage:\n  files:\n    - path: /etc/x\n      contents:\n        inline: x\n"
}

// Every stable variant and version of the Butane library translates to an Ignition spec of
// mcp's one table, and the message on an unknown variant names the library's variants.
func TestStableVersionsTranslateToKnownSpecs(t *testing.T) {
	versions := map[string][]string{
		"fcos":      {"1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0", "1.7.0"},
		"flatcar":   {"1.0.0", "1.1.0"},
		"openshift": {"4.8.0", "4.9.0", "4.10.0", "4.11.0", "4.12.0", "4.13.0", "4.14.0", "4.15.0", "4.16.0", "4.17.0", "4.18.0", "4.19.0", "4.20.0", "4.21.0", "4.22.0"},
		"r4e":       {"1.0.0", "1.1.0"},
		"fiot":      {"1.0.0"},
	}
	for _, v := range variants {
		if len(versions[v]) == 0 {
			t.Errorf("variant %s: no version tried", v)
		}
	}
	for variant, vs := range versions {
		for _, v := range vs {
			res, problems := Translate([]byte(doc(variant, v)), nil)
			if res == nil {
				t.Errorf("%s %s: %v", variant, v, problems)
				continue
			}
			if _, ok := ignition.Lookup(res.Spec); !ok || len(res.Files) != 1 || string(res.Files[0].Contents) != "x" {
				t.Errorf("%s %s: spec %s, files %+v", variant, v, res.Spec, res.Files)
			}
		}
	}
	_, problems := Translate([]byte(doc("rhcos", "0.1.0")), nil)
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "rhcos variant has been removed") {
		t.Errorf("rhcos: %v", problems)
	}
}

// FuzzTranslate: no text makes the translator panic (translate, not Translate, whose
// recover would hide it) or gives a result beside an error.
func FuzzTranslate(f *testing.F) {
	for _, s := range []string{doc("fcos", "1.5.0"), doc("openshift", "4.14.0"), "variant: fcos\nversion: 1.5.0\nx: [[[[\n",
		"variant: fcos\nversion: 1.8.0-experimental\n", "variant: fcos\nversion: 1.5.0\nsystemd:\n  units:\n    - name: a.service\n      enabled: true\n",
		"a: &a [x, x]\nb: &b [*a, *a]\nvariant: fcos\nversion: 1.5.0\n", "", "null", "variant: null\nversion: ~\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		res, problems := translate([]byte(s), "", nil)
		for _, p := range problems {
			if p.Message == "" {
				t.Error("a problem without a message")
			}
			if res != nil && !p.Warning {
				t.Errorf("a result beside an error: %s", p.Message)
			}
		}
		if res == nil && len(problems) == 0 {
			t.Error("neither a result nor a problem")
		}
	})
}

// A file whose bytes mcp cannot know when it plans — from a URL (with or without a hash,
// compressed or not), or with fragments to append — is left in the first-boot part as the
// text gives it, named with why; the inline files beside it are managed, the compressed
// one with its bytes decompressed.
func TestUnknownBytesAreFirstBootOnly(t *testing.T) {
	text := `variant: fcos
version: 1.5.0
storage:
  files:
    - path: /etc/inline
      contents: {inline: x}
    - path: /etc/remote
      contents:
        source: https://example.com/r
        verification: {hash: sha512-` + strings.Repeat("0", 128) + `}
    - path: /etc/gz
      contents: {compression: gzip, source: "data:;base64,H4sIAAAAAAACA0sEAEO+t+gBAAAA"}
    - path: /etc/remote.gz
      contents: {compression: gzip, source: "https://example.com/r.gz"}
    - path: /etc/more
      append: [{inline: more}]
`
	res, problems := Translate([]byte(text), nil)
	if res == nil {
		t.Fatal(problems)
	}
	if len(res.Files) != 2 || res.Files[0].Path != "/etc/inline" || res.Files[1].Path != "/etc/gz" || string(res.Files[1].Contents) != "a" {
		t.Errorf("managed files %+v", res.Files)
	}
	want := []string{"/etc/remote (storage.files.1): contents from https://example.com/r",
		"/etc/remote.gz (storage.files.3): contents from https://example.com/r.gz", "/etc/more (storage.files.4): 1 fragment(s) to append"}
	if fmt.Sprint(res.FirstBootFiles) != fmt.Sprint(want) {
		t.Errorf("first-boot files %q", res.FirstBootFiles)
	}
	fb := string(res.FirstBoot)
	for _, s := range []string{`"source":"https://example.com/r"`, `"hash":"sha512-000`, `"compression":"gzip"`, `"append":[{`, `"source":"data:,more"`} {
		if !strings.Contains(fb, s) {
			t.Errorf("first-boot part lacks %s: %s", s, fb)
		}
	}
	if strings.Contains(fb, "/etc/inline") {
		t.Errorf("managed file in the first-boot part: %s", fb)
	}
}

// gzipped is data gzip-compressed, as a data URL.
func gzipped(t *testing.T, data ...[]byte) string {
	t.Helper()
	var b bytes.Buffer
	for _, d := range data { // each a gzip member of its own: a multistream file
		z, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
		z.Write(d)
		z.Close()
	}
	return "data:;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// Compressed inline contents are managed: decompressed as Ignition and the MCO's daemon
// decompress them (every gzip member, the hash checked on what they inflate to), within
// MaxInflated for the whole text, so that a decompression bomb is refused naming the
// file. (They were first boot only.)
func TestCompressedContentsAreDecompressed(t *testing.T) {
	bin := []byte{0, 0xff, '\n', 0x1b, 'z'}
	sum := sha512.Sum512(append([]byte("one\n"), bin...))
	bu := func(files ...string) []byte {
		return []byte("variant: fcos\nversion: 1.6.0\nstorage:\n  files:\n" + strings.Join(files, ""))
	}
	gz := func(path, url, extra string) string {
		return fmt.Sprintf("    - path: %s\n      contents:\n        compression: gzip\n        source: %q\n%s", path, url, extra)
	}
	res, problems := Translate(bu(gz("/etc/multi", gzipped(t, []byte("one\n"), bin),
		fmt.Sprintf("        verification: {hash: sha512-%x}\n", sum))), nil)
	if res == nil || len(res.Files) != 1 || !bytes.Equal(res.Files[0].Contents, append([]byte("one\n"), bin...)) || res.FirstBoot != nil {
		t.Fatalf("multistream gzip with its hash: %+v %v", res, problems)
	}
	zeros := func(n int) []byte { return make([]byte, n) }
	for _, c := range []struct {
		name  string
		text  []byte
		wants string
	}{
		{"bomb", bu(gz("/etc/bomb", gzipped(t, zeros(MaxInflated+1)), "")),
			"file /etc/bomb (storage.files.0): its gzip-compressed contents decompress to more than mcp takes (32 MiB"},
		{"two files over the bound together", bu(gz("/etc/a", gzipped(t, zeros(MaxInflated/2)), ""), gz("/etc/b", gzipped(t, zeros(MaxInflated/2+1)), "")),
			"file /etc/b (storage.files.1): its gzip-compressed contents decompress to more than mcp takes"},
		{"wrong hash", bu(gz("/etc/h", gzipped(t, []byte("x")), "        verification: {hash: sha512-"+strings.Repeat("0", 128)+"}\n")),
			"file /etc/h (storage.files.0): contents: verification: the contents hash to sha512-"},
	} {
		res, problems := Translate(c.text, nil)
		if res != nil || len(problems) == 0 || !strings.Contains(fmt.Sprint(problems), c.wants) {
			t.Errorf("%s: want …%s…, got %+v %v", c.name, c.wants, res, problems)
		}
	}
	// At the bound exactly, it is taken.
	if res, problems := Translate(bu(gz("/etc/full", gzipped(t, zeros(MaxInflated)), "")), nil); res == nil || len(res.Files[0].Contents) != MaxInflated {
		t.Errorf("%d bytes, the bound: %v", MaxInflated, problems)
	}
}
