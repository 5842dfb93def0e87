package content

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// stored is a rendered config as mcp stored and served it while it carried the Ignition
// config beside the content: the shape names were hashed over.
type stored struct {
	Name            string          `json:"name"`
	Pool            string          `json:"pool"`
	IgnitionVersion string          `json:"ignition_version"`
	OSImage         string          `json:"os_image,omitempty"`
	KernelArgs      []string        `json:"kernel_args,omitempty"`
	Files           []model.File    `json:"files,omitempty"`
	Units           []model.Unit    `json:"units,omitempty"`
	Sources         []string        `json:"sources,omitempty"`
	Ignition        json.RawMessage `json:"ignition"`
}

func storedOf(r *model.Rendered) stored {
	return stored{r.Name, r.Pool, r.IgnitionVersion, r.OSImage, r.KernelArgs, r.Files, r.Units, r.Sources, encode(r)}
}

// nameBefore is how a config was named while it carried its Ignition config.
func nameBefore(r *model.Rendered) string {
	s := storedOf(r)
	s.Name = ""
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return "rendered-" + r.Pool + "-" + hex.EncodeToString(sum[:])[:32]
}

func sample() *model.Rendered {
	yes := true
	r := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0", OSImage: "img:1", KernelArgs: []string{"nosmt", "a=<b>&c"},
		Files: []model.File{{Entry: model.Entry{Path: "/etc/a"}, Mode: 0o644, Contents: []byte("alpha <&> \u2028\n")},
			{Entry: model.Entry{Path: "/etc/bin", User: "core"}, Mode: 0o600, Contents: []byte{0xff, 0, 1}}},
		Units:   []model.Unit{{Name: "u.service", Enabled: &yes, Contents: "[Service]\n", Dropins: []model.Dropin{{Name: "10.conf", Contents: "x"}}}},
		Sources: []string{"10-a"}}
	r.Name = Name(r)
	return r
}

// TestNamesAsWhenStoredWithIgnition: a config is named as it was when it carried its
// Ignition config, for every shape TestIgnitionBytesAsBefore tries.
func TestNamesAsWhenStoredWithIgnition(t *testing.T) {
	for i, r := range append(ignitionCases(), sample()) {
		r.Pool = "p"
		if got, want := Name(r), nameBefore(r); got != want {
			t.Fatalf("case %d: named %s, before %s", i, got, want)
		}
		if ign, name := IgnitionAndName(r); !bytes.Equal(ign, encode(r)) || name != Name(r) {
			t.Fatalf("case %d: IgnitionAndName is not Ignition and Name", i)
		}
	}
}

// TestContentOnce: a rendered config's JSON carries each file's content once (its
// contents, not beside them a data URL), and reads back to the same name.
func TestContentOnce(t *testing.T) {
	r := sample()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"ignition":`)) || bytes.Contains(b, []byte("data:")) {
		t.Errorf("the Ignition config is in the stored form: %s", b)
	}
	if n := bytes.Count(b, []byte(base64.StdEncoding.EncodeToString(r.Files[0].Contents))); n != 1 {
		t.Errorf("the file's contents are in it %d times: %s", n, b)
	}
	var back model.Rendered
	if err := json.Unmarshal(b, &back); err != nil || Check(&back) != nil || !bytes.Equal(Ignition(&back), encode(r)) {
		t.Errorf("read back: %v, %v", err, Check(&back))
	}
}

// TestStoredWithIgnitionReads: a config an older mcp stored (or served, or saved in a
// plan) with its Ignition config reads, checks against its name and settles into the
// content-once form; one whose stored Ignition config is not what its content gives
// (rendered before the encoding was what it is) keeps it, is named by it and serves it.
func TestStoredWithIgnitionReads(t *testing.T) {
	r := sample()
	old, _ := json.MarshalIndent(storedOf(r), "", "  ")
	var back model.Rendered
	if err := json.Unmarshal(old, &back); err != nil {
		t.Fatal(err)
	}
	if back.LegacyIgnition == nil || Check(&back) != nil {
		t.Fatalf("read: ignition %s, %v", back.LegacyIgnition, Check(&back))
	}
	Settle(&back)
	if back.LegacyIgnition != nil || Check(&back) != nil {
		t.Errorf("settled: ignition %s, %v", back.LegacyIgnition, Check(&back))
	}
	if b, _ := json.Marshal(&back); bytes.Contains(b, []byte(`"ignition":`)) {
		t.Errorf("settled, it is still stored with its Ignition config: %s", b)
	}

	// One rendered before the Ignition config carried kernel arguments.
	s := storedOf(r)
	s.Ignition = json.RawMessage(strings.Replace(string(s.Ignition), `"kernelArguments":{"shouldExist":["nosmt","a=\u003cb\u003e\u0026c"]},`, "", 1))
	if bytes.Equal(s.Ignition, encode(r)) {
		t.Fatal("the stored Ignition config was not changed")
	}
	s.Name = ""
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	s.Name = "rendered-worker-" + hex.EncodeToString(sum[:])[:32]
	b, _ = json.Marshal(s)
	var older model.Rendered
	if err := json.Unmarshal(b, &older); err != nil {
		t.Fatal(err)
	}
	Settle(&older)
	if Check(&older) != nil || !bytes.Equal(Ignition(&older), s.Ignition) {
		t.Errorf("an older encoding: %v, serves %s", Check(&older), Ignition(&older))
	}
	if full, _ := json.Marshal(FullOf(&older)); !bytes.Equal(full, b) {
		t.Errorf("its full form is not what was stored:\n%s\n%s", full, b)
	}
}

// TestFirstBootRecordEmbedsTheFullForm: the record embeds its config with the Ignition
// config beside the content (the bytes records had, which older agents check names on),
// and reads back, from that form or the content-once one, settled.
func TestFirstBootRecordEmbedsTheFullForm(t *testing.T) {
	r := sample()
	rec := FirstBootOf(r)
	rec.Config = r
	want, _ := json.Marshal(struct {
		Rendered string  `json:"rendered"`
		OSImage  string  `json:"os_image,omitempty"`
		Config   *stored `json:"config,omitempty"`
	}{r.Name, r.OSImage, &stored{r.Name, r.Pool, r.IgnitionVersion, r.OSImage, r.KernelArgs, r.Files, r.Units, r.Sources, encode(r)}})
	got := rec.Encode()
	if !bytes.Equal(got, append(want, '\n')) {
		t.Errorf("record\n%s\nbefore\n%s", got, want)
	}
	plain, _ := json.Marshal(struct {
		Rendered string          `json:"rendered"`
		OSImage  string          `json:"os_image"`
		Config   *model.Rendered `json:"config"`
	}{r.Name, r.OSImage, r})
	for _, b := range [][]byte{got, plain} {
		back, err := ParseFirstBoot(b)
		if err != nil || back.Config == nil || back.Config.LegacyIgnition != nil || back.Config.Name != r.Name {
			t.Errorf("%s: %+v, %v", b, back, err)
		}
	}
}
