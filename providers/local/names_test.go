package local

import (
	"os"
	"strings"
	"testing"
)

// TestInitRefusesNamesAFleetCannotHold: mcp fleet init takes pool names that make node
// names and labels, and zones that are label values; anything else is refused, naming
// it, before a file is written.
func TestInitRefusesNamesAFleetCannotHold(t *testing.T) {
	for _, tt := range []struct {
		pool, zone, want string
	}{
		{"UPPER", "a", `pool name "UPPER"`},
		{"../x", "a", `pool name "../x"`},
		{".add", "a", `pool name ".add"`},
		{strings.Repeat("p", 64), "a", "must be no more than 63 characters"},
		{"worker", "../../z", `zone "../../z"`},
	} {
		dir := t.TempDir()
		err := Init(dir, InitSpec{Pools: []PoolSize{{tt.pool, 2}}, Zones: []string{tt.zone}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("pool %q, zone %q: %v, want %q", tt.pool, tt.zone, err, tt.want)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("pool %q, zone %q: %d files written", tt.pool, tt.zone, len(ents))
		}
	}
}

// TestSetRefusesABadZone: fleet set zone=… takes label values only.
func TestSetRefusesABadZone(t *testing.T) {
	_, dir := newFleet(t, 1, Options{})
	if err := Set(dir, "worker-0", []string{"zone=../../z"}); err == nil || !strings.Contains(err.Error(), `zone "../../z"`) {
		t.Errorf("zone=../../z: %v", err)
	}
	if err := Set(dir, "worker-0", []string{"zone=eu-west-1b"}); err != nil {
		t.Errorf("zone=eu-west-1b: %v", err)
	}
}
