package local

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mcpfleet/mcp/model"
	"github.com/mcpfleet/mcp/providers"
)

// Drain evicts the node's pods, DaemonSet pods excepted. An eviction is refused while a
// PodDisruptionBudget selecting the pod allows no disruption (or while the node's
// fault.drain is set); refused evictions are retried after opts.RetryDelay until
// opts.Timeout, and the error then names the PDB and the pod.
func (p *Provider) Drain(ctx context.Context, node string, opts providers.DrainOptions) error {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = time.Second
	}
	start := time.Now()
	if err := sleep(ctx, p.o.DrainDuration); err != nil {
		return fmt.Errorf("drain node %s: %w", node, err)
	}
	for {
		blocked, err := p.drainFault(node)
		if err == nil && blocked == "" {
			blocked, err = p.evict(node)
		}
		if err != nil {
			return fmt.Errorf("drain node %s: %w", node, err)
		}
		if blocked == "" {
			return nil
		}
		if time.Since(start)+opts.RetryDelay > opts.Timeout {
			return fmt.Errorf("drain node %s: %s after %s", node, blocked, time.Since(start).Round(time.Millisecond))
		}
		if err := sleep(ctx, opts.RetryDelay); err != nil {
			return fmt.Errorf("drain node %s: %s: %w", node, blocked, err)
		}
	}
}

// evict evicts what it can; it returns why the first refused pod was refused ("" when the
// node is empty of evictable pods). The PDBs' status is the one Refresh would compute,
// kept up to date by the cache (pdbIndex) rather than computed from the whole fleet.
func (p *Provider) evict(node string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ff, err := readFleetFile(p.o.Dir)
	if err != nil {
		return "", err
	}
	var pdbs []model.PDB
	var pods []podFile
	err = p.cache.look(func() error {
		if pdbs, err = p.cache.pdbStatus(ff.PDBs, time.Now()); err != nil {
			return err
		}
		pods, err = p.cache.pods(node)
		pods = slices.Clone(pods) // evictions are marked in it
		return err
	})
	if err != nil {
		return "", err
	}
	blocked := ""
	var evicted []string
	for i := range pods {
		pod := &pods[i]
		if pod.DaemonSet || pod.Evicted {
			continue
		}
		// The next pod's budget counts this eviction (model.Evict).
		mp := model.Pod{Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels, Ready: pod.Ready}
		if refused := model.Evict(&mp, pdbs); refused != "" {
			if blocked == "" {
				blocked = refused
			}
			continue
		}
		pod.Evicted = true
		evicted = append(evicted, pod.Namespace+"/"+pod.Name)
	}
	if len(evicted) > 0 {
		// Logged before pods.json is written: an eviction begins a disruption (events.go).
		if err := logEvents(p.o.Dir, node, Event{Kind: EventDrain, Pods: evicted}); err != nil {
			return "", err
		}
		if err := writeJSON(podsFile(p.o.Dir, node), pods); err != nil {
			return "", fmt.Errorf("writing %s: %w", relNodeFile(node, "pods.json"), err)
		}
	}
	return blocked, nil
}
