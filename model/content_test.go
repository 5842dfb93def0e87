package model

import (
	"strings"
	"testing"
)

// A policy's unit is held to what systemd takes as a name: the agent refuses anything
// else, so the configuration must too.
func TestParsePolicyRefusesOddUnitNames(t *testing.T) {
	for _, s := range []string{"restart:foo bar", "reload:a/b.service", "restart:..", "restart:x\x00.service",
		"restart:" + strings.Repeat("u", 256)} {
		if _, err := ParsePolicy(s); err == nil {
			t.Errorf("ParsePolicy(%q) accepted", s)
		}
	}
	if p, err := ParsePolicy("restart:chronyd.service"); err != nil || p.Unit != "chronyd.service" {
		t.Errorf("a plain unit: %v %v", p, err)
	}
}

func TestParseStepKeyInvertsKey(t *testing.T) {
	for _, s := range []Step{{Kind: StepCordon}, {Kind: StepWrite, Target: "/etc/a b"}, {Kind: StepRestart, Target: "chronyd.service"}} {
		got, err := ParseStepKey(s.Key())
		if err != nil || got != s {
			t.Errorf("ParseStepKey(%q) = %v, %v", s.Key(), got, err)
		}
	}
	if _, err := ParseStepKey("explode /"); err == nil {
		t.Error("an unknown step kind parsed")
	}
}
