package content

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vincent-petithory/dataurl"

	"github.com/mcpfleet/mcp/testkit/anybytes"
)

// dataURLBefore is DataURL as it was until [, ] and DEL were escaped, kept to prove that
// every content that rendered then encodes to the same bytes now (names hash them).
func dataURLBefore(b []byte) string {
	if utf8.Valid(b) {
		var sb strings.Builder
		sb.WriteString("data:,")
		for _, c := range b {
			if c >= 0x80 || c <= ' ' || strings.IndexByte(`%#?"<>\^`+"`{|}", c) >= 0 {
				fmt.Fprintf(&sb, "%%%02X", c)
			} else {
				sb.WriteByte(c)
			}
		}
		return sb.String()
	}
	return "data:;base64," + base64.StdEncoding.EncodeToString(b)
}

// Encodings and a name recorded before [, ] and DEL were escaped: they must not change.
func TestDataURLKnownEncodings(t *testing.T) {
	for content, want := range map[string]string{
		"":                                 "data:,",
		"a\n":                              "data:,a%0A",
		"server time.example.com iburst\n": "data:,server%20time.example.com%20iburst%0A",
		"a b\tc\r\n%#?\"<>\\^`{|}~!$&'()*+,;=:@/": "data:,a%20b%09c%0D%0A%25%23%3F%22%3C%3E%5C%5E%60%7B%7C%7D~!$&'()*+,;=:@/",
		"héllo ✓\n":          "data:,h%C3%A9llo%20%E2%9C%93%0A",
		"\x00\x01\x1f":       "data:,%00%01%1F",
		"\xff\xfe\x00binary": "data:;base64,//4AYmluYXJ5",
		// Newly escaped: these never rendered before.
		"[main]\n": "data:,%5Bmain%5D%0A",
		"\x7f":     "data:,%7F",
	} {
		if got := DataURL([]byte(content)); got != want {
			t.Errorf("DataURL(%q) = %q, want %q", content, got, want)
		}
	}
	if got, want := fixture().Name, "rendered-worker-14d66bb300fc6a1163373bf76be77c9e"; got != want {
		t.Errorf("the fixture is named %s now, %s before: every existing fleet would re-roll", got, want)
	}
}

// Every content that Ignition's parser accepted as encoded before encodes to the same
// bytes now, and every content whose encoding changed was refused by it before.
func TestDataURLUnchangedWhereItRendered(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	contents := [][]byte{}
	for _, b := range anybytes.Classes() {
		contents = append(contents, b)
	}
	for range 5000 {
		contents = append(contents, anybytes.Random(rng, 64))
	}
	for c := range 256 {
		contents = append(contents, []byte{byte(c)}, []byte{'a', byte(c), '\n'})
	}
	changed := 0
	for _, b := range contents {
		before, now := dataURLBefore(b), DataURL(b)
		_, err := dataurl.DecodeString(before)
		switch {
		case err == nil && now != before:
			t.Errorf("content %q rendered as %q, now %q", b, before, now)
		case err != nil && now == before:
			t.Errorf("content %q: %q is still refused: %v", b, now, err)
		case err != nil:
			changed++
			if !bytes.ContainsAny(b, "[]\x7f") {
				t.Errorf("content %q without [, ] or DEL was refused before: %v", b, err)
			}
		}
	}
	if changed == 0 {
		t.Error("no content encodes differently now: the test draws none with [, ] or DEL")
	}
}

// The bytes DataURL leaves raw are exactly those the data-URL lexer takes as data, less %
// and ?; each of the others alone is refused by it.
func TestDataURLRawBytesAreTheLexers(t *testing.T) {
	for c := range 256 {
		_, err := dataurl.DecodeString("data:," + string([]byte{byte(c)}))
		lexerTakes := err == nil || c == '%' // % alone is a bad escape, not a bad character
		if raw[c] && !lexerTakes {
			t.Errorf("byte %#02x is left raw, but the lexer refuses it: %v", c, err)
		}
		if !raw[c] && lexerTakes && c != '%' && c != '?' {
			t.Errorf("byte %#02x is escaped, but the lexer takes it raw", c)
		}
	}
}
