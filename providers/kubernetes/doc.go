// Package kubernetes is the provider for a real cluster: it observes nodes, pods and
// PodDisruptionBudgets through the API server and acts on them, and hands node steps to the
// node agents through the annotations of package protocol.
//
// Contract, per operation (each file holds one):
//
//   - Refresh (refresh.go) makes a constant number of requests whatever the fleet's size:
//     one paged LIST (500 a page) each of nodes, pods (all namespaces, bound, not finished)
//     and policy/v1 PodDisruptionBudgets. Nothing is read per node.
//   - Machine templates (templates.go, platforms.go) are read in the same refresh through
//     the dynamic client: one paged LIST each of machine.openshift.io/v1beta1 MachineSets
//     and cluster.x-k8s.io/v1beta1 MachineDeployments (all namespaces; a resource the
//     API server does not serve has none), and one GET per infrastructure template the
//     MachineDeployments name (its resource found by discovery, once). SetTemplateImage
//     (templatepatch.go) sets one template's image with a JSON patch that tests the old
//     value: nothing else of the object is written.
//   - Cordon and Uncordon (cordon.go) send kubectl's strategic merge patch of
//     spec.unschedulable (the cordon carries the apply's claim instead when it has one:
//     claim.go).
//   - Drain (drain.go) chooses the pods as kubectl drain --ignore-daemonsets does
//     (drainpods.go: DaemonSet pods kept, mirror pods skipped, emptyDir pods and pods
//     without a controller evicted or refused per Options, as --delete-emptydir-data and
//     --force decide) and evicts them through the eviction API, so PodDisruptionBudgets are
//     honoured by the API server; refused evictions are retried every
//     DrainOptions.RetryDelay, and an evicted pod is gone when it is deleted or replaced by
//     one with another UID. A drain that cannot finish names the node, the pod and the
//     PodDisruptionBudget with its numbers. This is kubectl's k8s.io/kubectl/pkg/drain
//     written out, not imported: that package links kustomize and Go's plugin loader,
//     which costs the mcp binary about a quarter of its size (docs/decisions.md, "Binary size").
//   - RunNodeSteps (handover.go) writes a protocol.Handover on the node (one JSON merge
//     patch) and watches that node until its agent reports Done on the target config
//     (or Degraded, with its reason) for that hand-over's update ID. An earlier apply's
//     unfinished hand-over to the same target is adopted, not handed over again. The wait
//     ends, naming why, when every list and watch of the node fails for RequestTimeout.
//   - ShareWatches (watch.go) keeps one list and watch of all nodes for the length of an
//     apply: ObserveNodes, RunNodeSteps and the Ready gate of WaitHealthy (health.go) read
//     it, so a rollout costs a few requests per node (the hand-over's GET and PATCH, the
//     watch of the node's pods), not a list of the fleet per node started.
//
// Every HTTP request goes through a counting transport: Requests (and APIRequests, the
// providers.RequestCounter interface) tell what a command cost. Every request has a
// deadline (timeout.go, Options.RequestTimeout): a watch until it starts answering, any
// other request until it is over; so an API server that stops answering fails requests,
// naming the timeout, instead of holding apply forever.
//
// The provider assumes nothing a bare API server does not give: no kubelet, scheduler or
// controller manager is needed for it to work (a PDB's status, though, is computed by the
// disruption controller; without one, whoever runs the cluster must set it).
package kubernetes
