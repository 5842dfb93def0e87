package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcpfleet/mcp/model"
)

// kured (a reboot daemon) keeps its reboot lock as an annotation of its own DaemonSet: a
// node that holds it is being rebooted by kured, or is about to be. The provider reads it
// with the nodes and lays each lock over its node's claim (model.KuredPrefix), so that
// plan, apply and mcp serve -fleetlock count it against the pool's budget as a claim mcp
// does not own (docs/decisions.md, "kured's lock is a claim").

// Defaults of the provider's kured settings: kured's own defaults (its --ds-namespace,
// --ds-name and --lock-annotation).
const (
	DefaultKuredDaemonSet  = "kube-system/kured"
	DefaultKuredAnnotation = "weave.works/kured-node-lock"
)

// maxKuredLock bounds the annotation read: an annotation of a real lock is a few hundred
// bytes a node; the API server allows 256 KiB of annotations in all.
const maxKuredLock = 256 << 10

// kuredLock is one entry of kured's lock, as kured writes it.
type kuredLock struct {
	NodeID  string    `json:"nodeID"`
	Created time.Time `json:"created"`
	// TTL is a Go duration in nanoseconds; zero or less: none (kured then judges the lock
	// by its own --lock-ttl, which mcp cannot see).
	TTL int64 `json:"TTL"`
}

// parseKuredLock reads kured's lock annotation: one lock ({"nodeID", "metadata",
// "created", "TTL"}) or several ({"maxOwners", "locks": [...]}). "null" and a lock list
// that is empty hold no node. Entries that name no node are left out, and said so in
// skipped; a value that is neither form is an error.
func parseKuredLock(raw string) (locks []kuredLock, skipped []string, err error) {
	if len(raw) > maxKuredLock {
		return nil, nil, fmt.Errorf("%d bytes, more than a lock can be (%d)", len(raw), maxKuredLock)
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(raw))
	if err := dec.Decode(&fields); err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("not one JSON object: more follows it")
	}
	if fields == nil { // null
		return nil, nil, nil
	}
	var entries []kuredLock
	if l, multi := fields["locks"]; multi {
		if err := json.Unmarshal(l, &entries); err != nil {
			return nil, nil, fmt.Errorf("locks: %w", err)
		}
	} else if _, multi := fields["maxOwners"]; multi {
		return nil, nil, nil // a multi-owner lock nobody holds
	} else {
		var one kuredLock
		if err := json.Unmarshal([]byte(raw), &one); err != nil {
			return nil, nil, err
		}
		entries = []kuredLock{one}
	}
	for i, e := range entries {
		if e.NodeID == "" {
			skipped = append(skipped, fmt.Sprintf("lock %d names no node (nodeID)", i))
			continue
		}
		locks = append(locks, e)
	}
	return locks, skipped, nil
}

// claim is the lock as a claim laid over its node's (model.KuredPrefix): held since it was
// created, expiring when its TTL ends (no expiry without one). ds names the DaemonSet.
func (l kuredLock) claim(ds string) model.Claim {
	c := model.Claim{Apply: model.KuredPrefix + l.NodeID, Host: "DaemonSet " + ds, Since: l.Created.UTC()}
	if l.TTL > 0 {
		c.Expires = c.Since.Add(time.Duration(l.TTL))
	}
	return c
}

// checkKuredDaemonSet is kured_daemonset's model.SettingSpec.Check: "" or namespace/name.
func checkKuredDaemonSet(v model.SettingValue) error {
	_, _, err := splitKuredDaemonSet(v.String)
	return err
}

func splitKuredDaemonSet(s string) (ns, name string, err error) {
	if s == "" {
		return "", "", nil
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		return "", "", fmt.Errorf("not namespace/name")
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return "", "", fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", "", fmt.Errorf("name %q: %s", name, strings.Join(errs, "; "))
	}
	return ns, name, nil
}

// checkKuredAnnotation is kured_lock_annotation's model.SettingSpec.Check.
func checkKuredAnnotation(v model.SettingValue) error {
	if errs := validation.IsQualifiedName(v.String); len(errs) > 0 {
		return fmt.Errorf("not an annotation key: %s", strings.Join(errs, "; "))
	}
	return nil
}

// kuredClaims reads kured's lock (Options.KuredDaemonSet; none when it is "" or the
// DaemonSet does not exist) as claims by node name. A lock kured itself could not read
// holds no node kured reboots: it is left out with a warning in the log. A DaemonSet that
// cannot be read (no right to, the API server failing) is an error: a budget is not kept
// by guessing.
func (p *Provider) kuredClaims(ctx context.Context) (map[string]model.Claim, error) {
	ns, name, err := splitKuredDaemonSet(p.o.KuredDaemonSet)
	if err != nil || name == "" {
		return nil, err
	}
	ds, err := p.client.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil // kured does not run here
	case err != nil:
		return nil, fmt.Errorf("reading kured's reboot lock on DaemonSet %s/%s (provider setting kured_daemonset): %w; "+
			"grant get on it (docs/kubernetes.md, \"kured\"), or set kured_daemonset = \"\" where kured does not run", ns, name, err)
	}
	key := p.o.kuredAnnotation()
	raw, ok := ds.Annotations[key]
	if !ok {
		return nil, nil
	}
	locks, skipped, err := parseKuredLock(raw)
	where := fmt.Sprintf("DaemonSet %s/%s, annotation %s", ns, name, key)
	if err != nil {
		// kured fails on the same value, taking no lock: no node is kured's to reboot.
		slog.Warn("kured's reboot lock is not readable, and holds no node", "where", where, "error", err.Error())
		return nil, nil
	}
	for _, s := range skipped {
		slog.Warn("kured's reboot lock: an entry is left out", "where", where, "entry", s)
	}
	out := make(map[string]model.Claim, len(locks))
	for _, l := range locks {
		c := l.claim(ns + "/" + name)
		// The same node twice (a hand edit): the lock that lasts longest counts.
		if prev, dup := out[l.NodeID]; !dup || lastsLonger(c, prev) {
			out[l.NodeID] = c
		}
	}
	return out, nil
}

func lastsLonger(a, b model.Claim) bool {
	return a.Expires.IsZero() && !b.Expires.IsZero() || !b.Expires.IsZero() && a.Expires.After(b.Expires)
}

// withKured lays kured's locks over nodes' claims (in place): a node kured holds shows
// kured's claim, its own kept as OwnClaim. A node whose own claim is held — an apply or a
// FleetLock client works on it — keeps that one: it takes the node's slot already, and
// apply judges it by its own holder.
func withKured(nodes []model.Node, locks map[string]model.Claim) {
	if len(locks) == 0 {
		return
	}
	for i := range nodes {
		n := &nodes[i]
		c, ok := locks[n.Name]
		if !ok || n.Claim.Held() {
			continue
		}
		n.OwnClaim, n.Claim = n.Claim, &c
	}
}

// overlayKured reads kured's lock and lays it over nodes.
func (p *Provider) overlayKured(ctx context.Context, nodes []model.Node) error {
	locks, err := p.kuredClaims(ctx)
	if err != nil {
		return err
	}
	withKured(nodes, locks)
	return nil
}
