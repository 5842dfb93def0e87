// Package acceptance proves mcp against real parts, never fakes of what it proves: the
// real mcp binary on local fleets (killed, signalled, its output closed — judged from each
// node's own event log and root), a real etcd, kube-apiserver, kube-controller-manager
// and kwok on loopback (acceptance/k8senv) with real agent processes, the real Ignition
// client booting a scratch root from mcp serve, and a real systemd manager over D-Bus
// where one can run here. The control-plane and Ignition binaries are built once from the
// module proxy by the Makefile and cached in bin/.
package acceptance
