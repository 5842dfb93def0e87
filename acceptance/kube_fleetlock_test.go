package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fleetLockClient is a FleetLock client written from the protocol's description
// (https://coreos.github.io/zincati/development/fleetlock/protocol): a POST of
// {"client_params": {"id", "group"}} with the header fleet-lock-protocol: true; 200 is
// success, anything else an error object {"kind", "value"}.
type fleetLockClient struct{ base, id, group string }

func (f fleetLockClient) call(op string) (int, string, error) {
	body, _ := json.Marshal(map[string]any{"client_params": map[string]string{"id": f.id, "group": f.group}})
	req, err := http.NewRequest(http.MethodPost, f.base+"/v1/"+op, strings.NewReader(string(body)))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("fleet-lock-protocol", "true")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		return 200, "", nil
	}
	var e struct{ Kind, Value string }
	if err := json.Unmarshal(b, &e); err != nil || e.Kind == "" || e.Value == "" {
		return resp.StatusCode, "", fmt.Errorf("%s: status %d, body %q is not the protocol's error object", op, resp.StatusCode, b)
	}
	return resp.StatusCode, e.Kind, nil
}

// An mcp apply and four FleetLock clients (one per node, as Zincati on each machine, its
// id the machine's machine-id) race for one pool of max_unavailable 1, every node of it
// needing a reboot from mcp: a client holds its slot for a moment (its reboot) and gives
// it back, again and again, until apply has finished. Judged from the Node objects through
// a watch: at no moment are more than one of the pool's nodes out of service — cordoned,
// NotReady, or held by a live FleetLock slot; the apply updates every node (exit 0), and
// the clients got slots both before and after it. The server runs as mcp-fleetlock, with
// deploy/fleetlock's rights and no more: anything it needs and may not do fails the test.
func TestKubeFleetLockSharesTheBudget(t *testing.T) {
	waiting(t)
	c := newKubeCluster(t, markerPools(1, "v1"), map[string]int{"worker": 4})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := map[string]string{}
	for i := range 4 {
		node := fmt.Sprintf("worker-%d", i)
		ids[node] = fmt.Sprintf("%032x", 0xf1ee7+i)
		patch := fmt.Sprintf(`{"status":{"nodeInfo":{"machineID":%q}}}`, ids[node])
		if _, err := c.env.Client.CoreV1().Nodes().Patch(ctx, c.name(node), types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	o := watchOutOfService(t, c)
	url := c.startServe(t, "mcp-fleetlock", "-fleetlock", "-fleetlock-lease", "1m") // deploy/fleetlock's rights alone

	var hold atomic.Int64              // how long a client's reboot takes
	hold.Store(int64(2 * time.Second)) // the first slot outlasts apply's plan: apply must wait for it
	var done atomic.Bool
	var granted, refused atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for node, id := range ids {
		cl := fleetLockClient{url, id, "default"}
		if node == "worker-3" {
			cl.group = "worker" // a group naming the pool itself
		}
		wg.Go(func() {
			for !done.Load() {
				code, kind, err := cl.call("pre-reboot")
				if err != nil {
					errs <- err
					return
				}
				if code == 200 {
					granted.Add(1)
					time.Sleep(time.Duration(hold.Load())) // the reboot
					if code, _, err := cl.call("steady-state"); err != nil || code != 200 {
						errs <- fmt.Errorf("%s steady-state: %d %v", node, code, err)
						return
					}
				} else if kind == "" || code < 400 {
					errs <- fmt.Errorf("%s pre-reboot: %d without a kind", node, code)
					return
				} else {
					refused.Add(1)
				}
				time.Sleep(time.Duration(50+mrand.IntN(200)) * time.Millisecond)
			}
		})
	}
	waitUntil(t, 20*time.Second, func() bool { return granted.Load() > 0 }, func() string { return "no FleetLock client got a slot before apply" })
	hold.Store(int64(300 * time.Millisecond))
	before := granted.Load()
	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-budget-wait=60s")
	if !strings.Contains(out, "FleetLock client") {
		t.Errorf("apply started while a FleetLock slot was held, and neither its plan nor its wait named the holder:\n%s", lastLines(out, 30))
	}
	after := granted.Load()
	waitUntil(t, 20*time.Second, func() bool { return granted.Load() > after }, func() string { return "no FleetLock client got a slot after apply" })
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if code != 0 {
		t.Fatalf("apply beside the FleetLock clients: exit %d\n%s", code, lastLines(out, 30))
	}
	o.mu.Lock()
	most, when := o.most, o.when
	o.mu.Unlock()
	t.Logf("slots granted %d (before apply %d, during it %d), refused %d; most of the pool out of service at once: %d (%s)",
		granted.Load(), before, after-before, refused.Load(), most, when)
	if most > 1 {
		t.Errorf("%d of the pool's nodes were out of service at once (%s); max_unavailable is 1", most, when)
	}
	c.checkConverged(t, "v1\n", c.pointer(t, "worker"))
}
