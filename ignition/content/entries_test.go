package content

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mcpfleet/mcp/model"
)

// A file, a directory and a link with every attribute set, and its JSON and name as mcp
// wrote them before the three shared model.Entry: the name hashes that JSON, so neither
// may change (a changed name re-rolls every fleet that has the config).
func TestTreeEntriesKeepTheirJSONAndName(t *testing.T) {
	none := []model.Policy{{Kind: model.PolicyNone}}
	r := &model.Rendered{Pool: "worker", IgnitionVersion: "3.4.0",
		Files: []model.File{{Entry: model.Entry{Path: "/etc/a", User: "core", Group: "wheel", OnChange: none},
			Mode: 0o644, Contents: []byte("a\n"), Sensitive: true}},
		Directories: []model.Directory{{Entry: model.Entry{Path: "/etc/d", User: "core", Group: "core", OnChange: none},
			Mode: 0o750, Overwrite: true}},
		Links: []model.Link{{Entry: model.Entry{Path: "/etc/l", User: "core", Group: "core", OnChange: none}, Target: "../usr/x"},
			{Entry: model.Entry{Path: "/etc/h"}, Target: "/etc/a", Hard: true}}}
	r.Name = Name(r)
	const (
		name = "rendered-worker-2dea832c6e0411b01c3ed6c61a578fa3"
		was  = `{"name":"` + name + `","pool":"worker","ignition_version":"3.4.0",` +
			`"files":[{"path":"/etc/a","mode":420,"user":"core","group":"wheel","contents":"YQo=","on_change":[{"kind":"none"}],"sensitive":true}],` +
			`"directories":[{"path":"/etc/d","mode":488,"user":"core","group":"core","on_change":[{"kind":"none"}],"overwrite":true}],` +
			`"links":[{"path":"/etc/l","target":"../usr/x","user":"core","group":"core","on_change":[{"kind":"none"}]},` +
			`{"path":"/etc/h","target":"/etc/a","hard":true}]}`
	)
	if r.Name != name {
		t.Errorf("named %s, %s before: every fleet with such a config would re-roll", r.Name, name)
	}
	b, err := json.Marshal(r)
	if err != nil || string(b) != was {
		t.Errorf("encodes as\n%s (%v), before as\n%s", b, err, was)
	}
	var back model.Rendered
	if err := json.Unmarshal([]byte(was), &back); err != nil {
		t.Fatal(err)
	}
	back.Provenance = r.Provenance
	if !reflect.DeepEqual(&back, r) {
		t.Errorf("the old JSON reads back as %+v, not %+v", back, *r)
	}
}
