// Package content is the part of the ignition room that every node links: the Ignition
// config a rendered config stands for (Ignition), the name its content gives it (Name,
// Check), and the first-boot record the boot server adds to a pool's served config
// (FirstBoot). It imports nothing but the model and the standard library, and none of
// Ignition's parsers: validating, serving and reading configs back is the ignition
// package's.
package content

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/mcpfleet/mcp/model"
)

// Ignition is the Ignition config (spec r.IgnitionVersion) a first-booting node of r's pool
// is served: its files, units and kernel arguments as Ignition's JSON. A config stored
// with its Ignition config keeps those bytes, which its name was made from.
func Ignition(r *model.Rendered) []byte {
	if r.Ignition != nil {
		return r.Ignition
	}
	return encode(r)
}

// Name is the name the content of r gives it: rendered-<pool>-<hash of everything but the
// name>. The same inputs give the same name on every machine and run, and a stored config
// whose name is not its Name was changed after it was named.
func Name(r *model.Rendered) string {
	c := *r
	c.Name = ""
	// Struct fields encode in a fixed order, slices are sorted by the renderer, and the
	// Ignition bytes are compacted by the encoder, so a stored and re-read config gives
	// the same bytes.
	b, err := json.Marshal(&c)
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
