package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpfleet/mcp/model"
)

// override is a file or unit that a later config declares again with another on_change
// policy: the later declaration wins whole, so what a change to the item needs changes
// with it — from a restart to a reboot when the later block gives no on_change. Nothing
// is wrong with that, but nothing else would say it.
type override struct {
	kind, name  string // "file", "/etc/chrony.conf"
	by, was     model.Origin
	now, before []model.Policy
	subject     model.Range // the overriding block
}

// appendOverride adds an override of item kind/name when its effective policy changes.
// at is the overriding declaration's range.
func appendOverride(ovs []override, kind, name string, at model.Range, by, was model.Origin, before, now []model.Policy) []override {
	if policyText(before) == policyText(now) {
		return ovs
	}
	return append(ovs, override{kind: kind, name: name, by: by, was: was, now: now, before: before, subject: at})
}

// policyText is a policy list as the plan's reasons say it, in a fixed order: a list
// without a policy needs a reboot (the MCO's default).
func policyText(ps []model.Policy) string {
	if len(ps) == 0 {
		return "reboot (no on_change)"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ", ")
}

// overrideSet gathers the overrides of every pool, one warning per pair of blocks with
// the pools it concerns (a config applied to three pools is one mistake, not three).
type overrideSet struct {
	list  []override
	pools [][]string
	index map[[4]string]int
}

func (s *overrideSet) add(pool string, ovs []override) {
	for _, o := range ovs {
		key := [4]string{o.kind, o.name, o.by.String(), o.was.String()}
		i, ok := s.index[key]
		if !ok {
			if s.index == nil {
				s.index = map[[4]string]int{}
			}
			i = len(s.list)
			s.index[key] = i
			s.list = append(s.list, o)
			s.pools = append(s.pools, nil)
		}
		s.pools[i] = append(s.pools[i], pool)
	}
}

// diags are the warnings, naming both blocks with their places.
func (s *overrideSet) diags() model.Diagnostics {
	var diags model.Diagnostics
	for i, o := range s.list {
		diags = append(diags, &model.Diagnostic{Severity: model.DiagWarning,
			Summary: fmt.Sprintf("Override changes the disruption policy of %s %s", o.kind, o.name),
			Detail: fmt.Sprintf("%s %s of %s (%s) replaces the one of %s (%s) in pool %s: a change to it now needs %s, not %s. "+
				"Give the later block the on_change the %s needs.",
				capital(o.kind), o.name, o.by.Block, o.by.Place(), o.was.Block, o.was.Place(), strings.Join(s.pools[i], ", "),
				policyText(o.now), policyText(o.before), o.kind),
			Subject: model.Subject(o.subject)})
	}
	return diags
}

func capital(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
