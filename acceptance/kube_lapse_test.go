package acceptance

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/mcpfleet/mcp/kubeapi/protocol"
)

// The second finding, on Kubernetes: an apply with -lock=false on another machine
// (here: in a PID namespace of its own) was killed holding a cordoned node; the next apply
// waited its whole -budget-wait for the room only that node's claim held, though the claim
// expired after 2 minutes. Now the node waits for its claim to lapse, is then the next
// apply's, and the room frees then: with -budget-wait=4m (the claim lasts 2) the next apply
// finishes every node, and each node rebooted once.
func TestKubeLapsedClaimFreesItsRoom(t *testing.T) {
	waiting(t)
	ns := inPIDNamespace(t)
	pools := markerPools(1, "v1")
	c := newKubeCluster(t, pools, map[string]int{"worker": 3})

	a := exec.Command(ns[0], append(ns[1:], c.bin, "apply", "-auto-approve", "-no-color", "-lock=false")...)
	a.Dir, a.Env = c.dir, append(os.Environ(), "KUBECONFIG="+c.kc["mcp-apply"])
	a.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var aOut bytes.Buffer
	a.Stdout, a.Stderr = &aOut, &aOut
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-a.Process.Pid, syscall.SIGKILL); a.Wait() })
	held := ""
	waitUntil(t, 2*time.Minute, func() bool {
		for name := range c.agents {
			if n := c.node(t, name); n.Spec.Unschedulable && n.Annotations[protocol.Claim] != "" {
				held = name
				return true
			}
		}
		return false
	}, func() string { return "the apply in its own PID namespace cordoned no node:\n" + aOut.String() })
	syscall.Kill(-a.Process.Pid, syscall.SIGKILL)
	a.Wait()
	if n := c.node(t, held); !n.Spec.Unschedulable {
		t.Fatalf("the kill came after %s was uncordoned: nothing tested\n%s", held, aOut.String())
	}

	out, code := c.mcp(t, "mcp-apply", "apply", "-auto-approve", "-no-color", "-lock=false", "-budget-wait=4m")
	if code != 0 {
		t.Fatalf("the next apply, the killed one's claim on %s lapsing within its -budget-wait: exit %d\n%s", held, code, lastLines(out, 30))
	}
	c.checkConverged(t, "v1\n", c.pointer(t, "worker"))
}
