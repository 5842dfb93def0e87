package planfile

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadPlan: Read never panics on any file content, and a plan it accepts, encoded again
// as Write encodes it, reads back as the same plan. Seeds: testdata/fuzz/FuzzReadPlan (one of them a
// plan of the quickstart).
func FuzzReadPlan(f *testing.F) {
	good, err := json.Marshal(validFile())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.Replace(good, []byte(`"format_version":0`), []byte(`"format_version":1`), 1))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "plan")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		pf, err := Read(p)
		if err != nil {
			return
		}
		first, err := json.Marshal(pf)
		if err != nil {
			t.Fatalf("encoding an accepted plan: %v", err)
		}
		// What Write saves, read back as Read reads it (without Write's fsyncs, which
		// would make the fuzzer crawl).
		again, err := decode(first)
		if err != nil {
			t.Fatalf("an accepted plan, saved again, does not read: %v\n%s", err, first)
		}
		second, _ := json.Marshal(again)
		if !bytes.Equal(first, second) {
			t.Fatalf("plan round trip differs:\n%s\n%s", first, second)
		}
	})
}
