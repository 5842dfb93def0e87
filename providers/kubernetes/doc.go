// Package kubernetes is the provider for a real cluster: it observes nodes, pods and
// PodDisruptionBudgets through the API server and acts on them, and hands node steps to the
// node agents through the annotations of package protocol.
//
// Contract, per operation (each file holds one):
//
//   - Refresh (refresh.go) makes a constant number of requests whatever the fleet's size:
//     one paged LIST (500 a page) each of nodes, pods (all namespaces, bound, not finished)
//     and policy/v1 PodDisruptionBudgets. Nothing is read per node.
//   - Cordon and Uncordon (cordon.go) use k8s.io/kubectl/pkg/drain's cordon helper.
//   - Drain (drain.go) uses k8s.io/kubectl/pkg/drain to choose the pods (DaemonSet pods
//     kept, mirror pods skipped, owner-less pods and emptyDir pods evicted) and to evict them
//     through the eviction API, so PodDisruptionBudgets are honoured by the API server. The
//     retry of refused evictions is ours: the library of this version waits a fixed,
//     uninterruptible 5s between attempts, and DrainOptions.RetryDelay must be honoured. A
//     drain that cannot finish names the node, the pod and the PodDisruptionBudget with
//     its numbers.
//   - RunNodeSteps (handover.go) writes a protocol.Handover on the node (one JSON merge
//     patch) and watches that node until its agent reports Done on the target config
//     (or Degraded, with its reason) for that hand-over's update ID.
//
// Every HTTP request goes through a counting transport: Requests (and APIRequests, the
// providers.RequestCounter interface) tell what a command cost.
//
// The provider assumes nothing a bare API server does not give: no kubelet, scheduler or
// controller manager is needed for it to work (a PDB's status, though, is computed by the
// disruption controller; without one, whoever runs the cluster must set it).
package kubernetes
