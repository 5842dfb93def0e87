package chaos

import (
	"fmt"
	"path/filepath"
	"regexp"
	"time"

	"github.com/mcpfleet/mcp/providers/local"
)

// rebootClaim is a line in which apply says it rebooted a node: "node.X: reboot done (…)".
// A reboot it reports as having happened before ("reboot done: already happened …") is
// not a claim of this run.
var rebootClaim = regexp.MustCompile(`(?m)^node\.(\S+): reboot done(?:: boot id|\s\()`)

// AuditReboots checks what one apply, run from start to end, said of reboots against the
// fleet's own records: every node it says it rebooted has a reboot in its event log in
// that time. It returns one problem per claim the log does not back.
func AuditReboots(fleet, out string, start, end time.Time) ([]string, error) {
	claims := rebootClaim.FindAllStringSubmatch(out, -1)
	if len(claims) == 0 {
		return nil, nil
	}
	logs, err := local.ReadEvents(fleet)
	if err != nil {
		return nil, err
	}
	var problems []string
	for _, c := range claims {
		node := c[1]
		backed := false
		for _, e := range logs[node] {
			if e.Kind == local.EventReboot && !e.Time.Before(start) && !e.Time.After(end) {
				backed = true
				break
			}
		}
		if !backed {
			problems = append(problems, fmt.Sprintf("apply said node %s rebooted, and its event log has no reboot between %s and %s",
				node, start.Format(time.StampMilli), end.Format(time.StampMilli)))
		}
	}
	return problems, nil
}

// auditRun runs apply with args and audits its reboot claims (AuditReboots) into problems.
func (r Runner) auditRun(problems *[]string, args ...string) (string, error) {
	start := time.Now()
	out, err := r.Run(args...)
	end := time.Now()
	found, aerr := AuditReboots(filepath.Join(r.Dir, "fleet"), out, start, end)
	if aerr != nil {
		return out, aerr
	}
	*problems = append(*problems, found...)
	return out, err
}
