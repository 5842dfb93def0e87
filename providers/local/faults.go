package local

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// faults are the failures injected into a node: node.json's "faults", set with
// mcp fleet set NODE fault.KIND=VALUE and removed with fault.KIND- (docs/fleet-format.md).
// The crash harness and the tests use them to make one node fail one way.
type faults struct {
	Write   string `json:"write,omitempty"`   // a write step on this path or unit (* for any) fails
	Restart string `json:"restart,omitempty"` // a restart of this unit (* for any) fails
	Reboot  string `json:"reboot,omitempty"`  // rebootHang or rebootRollback
	Drain   string `json:"drain,omitempty"`   // "pdb": evictions are refused as by a PodDisruptionBudget
}

// The values of fault.reboot.
const (
	rebootHang = "hang" // a reboot never comes back
	// rebootRollback: a reboot comes back on the OS image and kernel arguments the machine
	// ran before, the staged ones discarded, as a deployment that failed to boot is rolled
	// back (greenboot, the boot counting of bootupd).
	rebootRollback = "rollback"
)

// setFault sets one fault, or with del removes it.
func setFault(f *faults, kind, value string, del bool) error {
	var field *string
	var only []string // the values the fault takes, if it takes only some
	switch kind {
	case "write":
		field = &f.Write
	case "restart":
		field = &f.Restart
	case "reboot":
		field, only = &f.Reboot, []string{rebootHang, rebootRollback}
	case "drain":
		field, only = &f.Drain, []string{"pdb"}
	default:
		return fmt.Errorf("fault.%s: no such fault (want fault.write=PATH|*, fault.restart=UNIT|*, fault.reboot=hang|rollback or fault.drain=pdb)", kind)
	}
	switch {
	case del:
		*field = ""
	case only != nil && !slices.Contains(only, value):
		return fmt.Errorf("fault.%s: want %s, not %q", kind, strings.Join(only, " or "), value)
	case value == "":
		return fmt.Errorf("fault.%s: want a value (* for any)", kind)
	default:
		*field = value
	}
	return nil
}

// hits says whether a fault set to want applies to target.
func hits(want, target string) bool { return want != "" && (want == "*" || want == target) }

// injected is the error of an injected fault: it names where the fault is set, so that
// nobody takes it for a real failure.
func injected(node, kind string) error {
	return fmt.Errorf("injected fault (fault.%s in %s)", kind, relNodeFile(node, "node.json"))
}

// injectWrite is the executor's Inject hook: a write step the node's fault.write names
// fails (the agent then names the step and rolls back, as for a real failure).
func (p *Provider) injectWrite(node string) func(model.Step) error {
	return func(s model.Step) error {
		if s.Kind != model.StepWrite {
			return nil
		}
		r, err := p.readNode(node)
		if err != nil {
			return err
		}
		if hits(r.Faults.Write, s.Target) {
			return injected(node, "write")
		}
		return nil
	}
}

// drainFault is why the node's drain is refused when fault.drain is set ("" when not).
func (p *Provider) drainFault(node string) (string, error) {
	r, err := p.readNode(node)
	if err != nil || r.Faults.Drain == "" {
		return "", err
	}
	return "evictions refused as by a PodDisruptionBudget: " + injected(node, "drain").Error(), nil
}
