package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/providers"
)

// withoutWatcher makes p's cache keep nothing, as where there is no watcher.
func withoutWatcher(p *Provider) { p.cache.started = true }

// Every way a node's files change between two looks is seen by the second: a write
// through the one write path (mcp fleet set), here and in another process, an edit in
// place, node.json removed, the node's directory replaced.
func TestObserveNodesSeesEveryChange(t *testing.T) {
	if dir := os.Getenv("MCP_LOCAL_TEST_SET"); dir != "" {
		if err := Set(dir, "worker-2", []string{"ready=false"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	for _, watched := range []bool{true, false} {
		t.Run(fmt.Sprintf("watched=%v", watched), func(t *testing.T) {
			p, dir := newFleet(t, 3, Options{})
			if !watched {
				withoutWatcher(p)
			}
			if n := observe1(t, p, "worker-1"); !n.Ready {
				t.Fatalf("worker-1 %+v", n)
			}
			set(t, dir, "worker-1", "ready=false")
			if n := observe1(t, p, "worker-1"); n.Ready {
				t.Error("a NotReady set after the first look was not seen")
			}
			observe1(t, p, "worker-2")
			cmd := exec.Command(os.Args[0], "-test.run=^TestObserveNodesSeesEveryChange$")
			cmd.Env = append(os.Environ(), "MCP_LOCAL_TEST_SET="+dir)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("mcp fleet set in another process: %v\n%s", err, out)
			}
			if n := observe1(t, p, "worker-2"); n.Ready {
				t.Error("a NotReady set by another process was not seen")
			}
			b, _ := os.ReadFile(nodeFile(dir, "worker-1"))
			os.WriteFile(nodeFile(dir, "worker-1"), []byte(strings.Replace(string(b), `"ready": false`, `"ready": true`, 1)), 0o644)
			if n := observe1(t, p, "worker-1"); !n.Ready {
				t.Error("node.json edited in place was not seen")
			}
			// The directory replaced by another node's files: moved away and back, renamed.
			nd := nodeDir(dir, "worker-1")
			os.Rename(nd, nd+".old")
			if _, err := p.ObserveNodes(context.Background(), []string{"worker-1"}); err == nil {
				t.Error("a node whose directory is gone was observed")
			}
			os.Rename(nd+".old", nd)
			set(t, dir, "worker-1", "unschedulable=true")
			if n := observe1(t, p, "worker-1"); !n.Unschedulable {
				t.Error("a change after the directory came back was not seen")
			}
			os.Remove(nodeFile(dir, "worker-1"))
			if _, err := p.ObserveNodes(context.Background(), []string{"worker-1"}); err == nil || !strings.Contains(err.Error(), `no node "worker-1"`) {
				t.Errorf("node.json removed: %v", err)
			}
		})
	}
}

// The index of PodDisruptionBudgets gives, after any sequence of drains, uncordons,
// reboots and changes by others (a node made NotReady, a pod edited in pods.json, the
// PDBs changed in fleet.json), the status a whole refresh computes.
func TestPDBIndexAgreesWithRefresh(t *testing.T) {
	for _, watched := range []bool{true, false} {
		t.Run(fmt.Sprintf("watched=%v", watched), func(t *testing.T) {
			p, dir := newFleet(t, 6, Options{})
			if !watched {
				withoutWatcher(p)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			ctx := context.Background()
			for step := 0; step < 150; step++ {
				node := fmt.Sprintf("worker-%d", rng.IntN(6))
				var what string
				switch rng.IntN(6) {
				case 0:
					what = "drain"
					p.Drain(ctx, node, providers.DrainOptions{Timeout: time.Millisecond, RetryDelay: time.Millisecond})
				case 1:
					what = "uncordon"
					if err := p.Uncordon(ctx, node); err != nil {
						t.Fatal(err)
					}
				case 2:
					what = "ready flip"
					set(t, dir, node, fmt.Sprintf("ready=%v", rng.IntN(2) == 0))
				case 3:
					// A reboot over already, ending in a moment (waited for), hung, or far off: so
					// that no reboot ends between the index's count and the refresh.
					what = "reboot"
					until := []time.Duration{-time.Millisecond, 10 * time.Millisecond, 0, time.Hour}[rng.IntN(4)]
					_, err := updateNode(dir, node, func(r *record) ([]Event, error) {
						r.Ready, r.NextBootID, r.RebootingUntil = false, newBootID(), time.Time{}
						if until != 0 {
							r.RebootingUntil = time.Now().Add(until)
						}
						return nil, nil
					})
					if err != nil {
						t.Fatal(err)
					}
					if until == 10*time.Millisecond {
						time.Sleep(15 * time.Millisecond)
					}
				case 4:
					what = "pods.json edited"
					pods, _ := readPods(dir, node)
					for i := range pods {
						pods[i].Ready = rng.IntN(3) > 0
					}
					if err := writeJSON(podsFile(dir, node), pods); err != nil {
						t.Fatal(err)
					}
				case 5:
					what = "fleet.json's PDBs changed"
					ff, _ := readFleetFile(dir)
					ff.PDBs[0].MinAvailable = 2 + rng.IntN(4)
					if rng.IntN(2) == 0 {
						ff.PDBs = append(ff.PDBs, pdbSpec{Namespace: "kube-system", Name: "agents", Selector: map[string]string{"app": "node-agent"}, MinAvailable: 4})
					}
					if err := writeJSON(filepath.Join(dir, "fleet.json"), ff); err != nil {
						t.Fatal(err)
					}
				}
				ff, err := readFleetFile(dir)
				if err != nil {
					t.Fatal(err)
				}
				var got, want any
				p.cache.look(func() error { got, err = p.cache.pdbStatus(ff.PDBs, time.Now()); return err })
				if err != nil {
					t.Fatal(err)
				}
				f, err := p.Refresh(ctx)
				if err != nil {
					t.Fatal(err)
				}
				want = f.PDBs
				if f.PDBs == nil {
					want = got // no PDBs: nothing to compare
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("step %d (%s on %s): index (+) and refresh (-) differ:\n%s", step, what, node, d)
				}
			}
		})
	}
}

// A reboot that ends changes no file until someone records it, yet its node's pods count as
// healthy again from its end, as a refresh (which records it) counts them.
func TestPDBIndexCountsAReturnWithoutAWrite(t *testing.T) {
	p, dir := newFleet(t, 3, Options{})
	ff, _ := readFleetFile(dir)
	healthy := func() int {
		t.Helper()
		var n int
		err := p.cache.look(func() error {
			s, err := p.cache.pdbStatus(ff.PDBs, time.Now())
			if err == nil {
				n = s[0].CurrentHealthy
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := healthy(); n != 3 {
		t.Fatalf("healthy %d, want 3", n)
	}
	until := time.Now().Add(50 * time.Millisecond)
	updateNode(dir, "worker-1", func(r *record) ([]Event, error) {
		r.Ready, r.NextBootID, r.RebootingUntil = false, newBootID(), until
		return nil, nil
	})
	if n := healthy(); n != 2 && time.Now().Before(until) {
		t.Errorf("healthy %d during worker-1's reboot, want 2", n)
	}
	time.Sleep(time.Until(until))
	if n := healthy(); n != 3 {
		t.Errorf("healthy %d after worker-1's reboot, want 3", n)
	}
}

func TestChangeLog(t *testing.T) {
	var l changeLog
	l.add("a")
	l.add("b")
	l.add("b")
	if dirs, all, now := l.since(0); all || now != 3 || strings.Join(dirs, " ") != "a b" {
		t.Errorf("since 0: %v %v %d", dirs, all, now)
	}
	if dirs, all, _ := l.since(2); all || strings.Join(dirs, " ") != "b" {
		t.Errorf("since 2: %v %v", dirs, all)
	}
	if dirs, all, _ := l.since(3); all || len(dirs) != 0 {
		t.Errorf("since 3: %v %v", dirs, all)
	}
	for i := 0; i < maxChangeLog+1; i++ {
		l.add(fmt.Sprint(i % 2))
	}
	if _, all, _ := l.since(3); !all {
		t.Error("a reader behind what the log keeps was not told everything changed")
	}
	now := l.seq
	l.add("c")
	if dirs, all, _ := l.since(now); all || strings.Join(dirs, " ") != "c" {
		t.Errorf("since %d: %v %v", now, dirs, all)
	}
	l.forgetAll()
	if _, all, _ := l.since(now + 1); !all {
		t.Error("after an overflow a reader was not told everything changed")
	}
}
