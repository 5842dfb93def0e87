package ignition

import (
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// What the rendered config's spec reports and a newer spec render may write does not — a
// field it lacks ("unused key"), setuid/setgid/sticky bits before 3.6.0 — is named with
// the oldest such spec, the ignition_version to set: LUKS cex came in 3.5.0, so under the
// default 3.4.0 the message says so; a key no spec has gets no such advice.
func TestUnusedKeyNamesTheSpecThatHasIt(t *testing.T) {
	for _, c := range []struct{ version, firstBoot, want, not string }{
		{"3.4.0", `{"storage":{"luks":[{"name":"data","device":"/dev/vdb","cex":{"enabled":true}}]}}`,
			`unused key cex (Ignition spec 3.5.0 takes it: set ignition_version = "3.5.0" in the mcp block)`, ""},
		{"3.4.0", `{"storage":{"luks":[{"name":"data","device":"/dev/vdb","bogus":true}]}}`, "unused key bogus", "takes it"},
		{"3.5.0", `{"storage":{"directories":[{"path":"/var/tmp2","mode":1023}]}}`,
			`setuid/setgid/sticky bits are not supported or functional in spec versions older than 3.6.0 (Ignition spec 3.6.0 takes it: set ignition_version = "3.6.0" in the mcp block)`, ""},
	} {
		r := &model.Rendered{Pool: "worker", IgnitionVersion: c.version, FirstBoot: []byte(c.firstBoot)}
		rpt, _ := Render(r)
		var msgs []string
		for _, e := range rpt {
			msgs = append(msgs, e.Path+": "+e.Message)
		}
		got := strings.Join(msgs, "\n")
		if !strings.Contains(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) {
			t.Errorf("%s: report\n%s\nwant …%s…", c.firstBoot, got, c.want)
		}
	}
	r := &model.Rendered{Pool: "worker", IgnitionVersion: "3.5.0",
		FirstBoot: []byte(`{"storage":{"luks":[{"name":"data","device":"/dev/vdb","cex":{"enabled":true}}]}}`)}
	if rpt, err := Render(r); err != nil || len(rpt) != 0 {
		t.Errorf("under 3.5.0: %v %v", rpt, err)
	}
}
