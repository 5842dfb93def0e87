package content

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/mcpfleet/mcp/model"
)

// Ignition is the Ignition config (spec r.IgnitionVersion) a first-booting node of r's pool
// is served: its files, units and kernel arguments as Ignition's JSON, each file's
// contents as a data URL. A rendered config carries its content once, so this is encoded
// from it — except for a config stored by an older mcp with an Ignition config that is not
// what its content gives (r.LegacyIgnition, which Settle keeps): its name was made from
// those bytes, and they are what it always served.
func Ignition(r *model.Rendered) []byte {
	if r.LegacyIgnition != nil {
		return r.LegacyIgnition
	}
	return encode(r)
}

// Name is the name the content of r gives it: rendered-<pool>-<hash of everything but the
// name, its Ignition config included>. The hash is over r's JSON with the Ignition config
// in it, as configs were stored when they carried it, so names did not change when they
// stopped. The same inputs give the same name on every machine and run, and a stored config
// whose name is not its Name was changed after it was named.
func Name(r *model.Rendered) string { return nameOf(r, Ignition(r)) }

// IgnitionAndName is Ignition(r) and Name(r), encoding the Ignition config once.
func IgnitionAndName(r *model.Rendered) ([]byte, string) {
	ign := Ignition(r)
	return ign, nameOf(r, ign)
}

func nameOf(r *model.Rendered, ign []byte) string {
	c := *r
	c.Name, c.LegacyIgnition = "", nil
	// Struct fields encode in a fixed order (the Ignition config last, as the field that
	// held it was), slices are sorted by the renderer, and the Ignition bytes are
	// compacted by the encoder, so a stored and re-read config gives the same bytes.
	b, err := json.Marshal(Full{&c, ign})
	if err != nil {
		panic("encoding a rendered config: " + err.Error()) // strings, numbers, booleans and JSON
	}
	sum := sha256.Sum256(b)
	return "rendered-" + r.Pool + "-" + hex.EncodeToString(sum[:])[:32]
}

// Check refuses a rendered config whose name does not match its content.
func Check(r *model.Rendered) error {
	if want := Name(r); r.Name != want {
		return fmt.Errorf("rendered config %q does not match its content (which names it %s): it was changed after it was rendered", r.Name, want)
	}
	return nil
}

// Settle drops the Ignition config a rendered config read from an older mcp's state, plan
// or answer carries beside its content, when it is the one the content gives: the config
// then carries its content once, and is named, served and written as one rendered now.
// One that differs (written before render's encoding was what it is) is kept.
func Settle(r *model.Rendered) {
	if r.LegacyIgnition == nil {
		return
	}
	// Marshalled, the stored bytes are compacted and escaped as the encoder writes them.
	if b, err := json.Marshal(r.LegacyIgnition); err == nil && bytes.Equal(b, encode(r)) {
		r.LegacyIgnition = nil
	}
}

// Full is a rendered config with its Ignition config beside its content, as mcp stored
// and served it before it carried the content once: the form the first-boot record embeds
// (for agents that check a config's name against that form), `mcp show -rendered -json`
// prints, and names are hashed over.
type Full struct {
	*model.Rendered
	Ignition json.RawMessage `json:"ignition"`
}

// FullOf is r in its full form.
func FullOf(r *model.Rendered) Full { return Full{r, Ignition(r)} }
