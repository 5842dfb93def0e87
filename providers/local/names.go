package local

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// The names a local fleet is given — node names, pool names, zones — are checked by
// Kubernetes' own rules before they become directories and labels, as a cluster would
// hold them: a name the fleet takes is one a real node could have.

// checkNodeName refuses what no Node could be named: a DNS-1123 subdomain is at most 253
// lowercase letters, digits, '-' and '.', starting and ending with a letter or digit (so
// never ".add-x", "..", "a/b" or "UPPER").
func checkNodeName(name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("node name %q: %s (a node's name is a DNS-1123 subdomain, such as worker-3 or node-1.example.com)",
			short(name), strings.Join(errs, "; "))
	}
	return nil
}

// checkPoolName refuses a pool name that cannot start a node name and be a label's name
// (node-role.kubernetes.io/POOL): a DNS-1123 label.
func checkPoolName(pool string) error {
	if errs := validation.IsDNS1123Label(pool); len(errs) > 0 {
		return fmt.Errorf("pool name %q: %s (a pool's name is a DNS-1123 label, such as worker or infra-2)",
			short(pool), strings.Join(errs, "; "))
	}
	return nil
}

// checkZone refuses a zone that cannot be the value of the label topology.kubernetes.io/zone.
func checkZone(zone string) error {
	if errs := validation.IsValidLabelValue(zone); len(errs) > 0 {
		return fmt.Errorf("zone %q: %s (a zone is a label value, such as a or eu-west-1b)", short(zone), strings.Join(errs, "; "))
	}
	return nil
}

// short is a name cut for an error message.
func short(s string) string {
	if len(s) > 80 {
		return s[:60] + "…(" + fmt.Sprint(len(s)) + " characters)"
	}
	return s
}

// addDirPrefix is where Add makes a node aside (FLEET/<prefix><random>): named by a digest
// of the node's name, since the name may be as long as a directory name can be.
func addDirPrefix(name string) string {
	sum := sha256.Sum256([]byte(name))
	return ".add-" + hex.EncodeToString(sum[:8]) + "-"
}
