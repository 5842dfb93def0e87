package bootsrv

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/internal/macaddr"
)

// A machine block's machine is told apart at first boot by Matchbox's selectors, given as
// query parameters of its pool's config URL: GET /config/<pool>?mac=…&uuid=…&hostname=…
// (docs/boot-server.md, "Machines"). A request whose selectors name a machine of that pool
// gets the machine's config (its variant of the pool's); one they name none of, or without
// them, the pool's. Other parameters are ignored, as Matchbox ignores labels no group
// selects on.

// machine is one machine block's prepared config.
type machine struct {
	name string
	pc   *poolConfig
}

// prepareMachines prepares each machine pointer of st, each apart (one that cannot be
// served answers 503 for that machine alone), into s.machines, keyed by pool, selector
// kind and value.
func (s *Snapshot) prepareMachines(st Stored, o ignition.ServeOptions) {
	if len(st.Machines) == 0 {
		return
	}
	s.machines = map[string]*machine{}
	prepared := map[string]*poolConfig{} // pool + rendered name → its config, prepared once
	for name, m := range st.Machines {
		key := m.Pool + "\x00" + m.Rendered
		pc := prepared[key]
		if pc == nil {
			if pp := s.pools[m.Pool]; pp != nil && pp.rendered == m.Rendered {
				pc = pp
			} else {
				pc = preparePointer(m.Pool, m.Rendered, st, o)
			}
			prepared[key] = pc
		}
		e := &machine{name: name, pc: pc}
		for _, mac := range m.MACs {
			s.machines[selectorKey(m.Pool, "mac", mac)] = e
		}
		if m.UUID != "" {
			s.machines[selectorKey(m.Pool, "uuid", m.UUID)] = e
		}
		if m.Hostname != "" {
			s.machines[selectorKey(m.Pool, "hostname", m.Hostname)] = e
		}
	}
}

func selectorKey(pool, kind, value string) string { return pool + "\x00" + kind + "\x00" + value }

// machineFor is the machine of pool the selectors of query name (nil: none), or why the
// request is refused: a malformed query or selector, or selectors naming two machines.
func (s *Snapshot) machineFor(pool, query string) (*machine, string) {
	if s.machines == nil || query == "" {
		return nil, ""
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, "malformed query: " + err.Error()
	}
	var found *machine
	for _, kind := range []string{"mac", "uuid", "hostname"} {
		for _, v := range q[kind] {
			if v == "" {
				continue // a variable the boot loader had no value for: as if absent
			}
			value, why := normalSelector(kind, v)
			if why != "" {
				return nil, why
			}
			m := s.machines[selectorKey(pool, kind, value)]
			if m == nil {
				continue
			}
			if found != nil && found != m {
				return nil, fmt.Sprintf("the selectors name two machines of pool %s: %s and %s", pool, found.name, m.name)
			}
			found = m
		}
	}
	return found, ""
}

// normalSelector is a selector's value as machine blocks keep it: a MAC in lower case with
// colons (iPXE's ${net0/mac:hexhyp} gives hyphens), a UUID and a hostname in lower case.
func normalSelector(kind, v string) (string, string) {
	if kind != "mac" {
		return strings.ToLower(v), ""
	}
	mac, ok := macaddr.Normal(v)
	if !ok {
		return "", fmt.Sprintf("mac %q is not a MAC address (52:54:00:12:34:56 or 52-54-00-12-34-56)", v)
	}
	return mac, ""
}

// MachineConfig is the body GET /config/<pool>?<query> answers a client sending accept:
// the config of the machine the query's selectors name, or the pool's.
func (s *Snapshot) MachineConfig(pool, query, accept string) ([]byte, error) {
	m, why := s.machineFor(pool, query)
	if why != "" {
		return nil, fmt.Errorf("pool %s: %s", pool, why)
	}
	if m == nil {
		return s.PoolConfig(pool, accept)
	}
	if m.pc.failed != "" {
		return nil, fmt.Errorf("machine %s: %s", m.name, m.pc.failed)
	}
	b, why := m.pc.negotiate(accept)
	if b == nil {
		return nil, fmt.Errorf("machine %s: %s", m.name, why)
	}
	return b.data, nil
}
