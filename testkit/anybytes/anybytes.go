// Package anybytes makes file contents for round-trip tests: every class of bytes a real
// node's files hold and an encoder can get wrong — empty, no trailing newline, CRLF, the
// characters URLs reserve ([ ] % # ? and friends), DEL and other control bytes, NUL,
// invalid UTF-8, every byte value, several MiB — and random mixes of them.
package anybytes

import (
	"bytes"
	"math/rand/v2"
)

// Classes are the named contents every round-trip test covers.
func Classes() map[string][]byte {
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	return map[string][]byte{
		"empty":               {},
		"one newline":         []byte("\n"),
		"no trailing newline": []byte("key=value"),
		"INI":                 []byte("[main]\ndns=none\n\n[connection]\nipv6.method=ignore\n"),
		"CRLF":                []byte("[Unit]\r\nDescription=x\r\n"),
		"URL reserved":        []byte(`%25 %zz # ? & = + ; / : @ ! $ ' ( ) * , [ ] " < > \ ^ ` + "` { | } ~"),
		"DEL and controls":    []byte("a\x7fb\x00c\x01\x1b[31mred\x1b[0m\t\v\f\r"),
		"UTF-8":               []byte("héllo ✓ 日本 \U0001F600\u0085\u2028\n"),
		"invalid UTF-8":       []byte("ok \xff\xfe \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 end"),
		"every byte":          every,
		"NUL only":            make([]byte, 17),
		"several MiB":         Large(rand.New(rand.NewPCG(1, 2)), 3<<20),
	}
}

// alphabets to draw random contents from: what text and binary files are made of.
var alphabets = [][]byte{
	[]byte("abc =\n[]#;%"),
	[]byte("\r\n\t \x00\x7f\x80\xff"),
	[]byte("é✓"), // split, these are also invalid UTF-8
}

// Random is a content of up to max bytes: random bytes, or bytes drawn from one of a few
// small alphabets (so text-like contents, which take the percent-encoded path, are as
// common as binary ones).
func Random(rng *rand.Rand, max int) []byte {
	n := rng.IntN(max + 1)
	b := make([]byte, n)
	switch k := rng.IntN(len(alphabets) + 1); k {
	case len(alphabets):
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
	default:
		a := alphabets[k]
		for i := range b {
			b[i] = a[rng.IntN(len(a))]
		}
	}
	return b
}

// Large is n bytes of mixed text lines and binary runs.
func Large(rng *rand.Rand, n int) []byte {
	var buf bytes.Buffer
	for buf.Len() < n {
		buf.Write(Random(rng, 4096))
		buf.WriteString("[section]\r\nline with spaces and %s\n")
	}
	return buf.Bytes()[:n]
}
