// Package agentcmd is the node agent's command line (docs/agent.md, docs/kubernetes.md),
// shared by `mcp agent` and the lean `mcp-agent` binary that the DaemonSet runs: that one
// links none of the engine, the Kubernetes provider, HCL, Butane or the boot server, so
// each node pays only for the agent.
package agentcmd

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcpfleet/mcp/agent/kagent"
	"github.com/mcpfleet/mcp/agent/standalone"
	"github.com/mcpfleet/mcp/cmd/internal/cmdhelp"
	"github.com/mcpfleet/mcp/kubeapi/kubeconfig"
	"github.com/mcpfleet/mcp/kubeapi/nodeclient"
	"github.com/mcpfleet/mcp/nodeexec"
	"github.com/mcpfleet/mcp/nodeexec/systemdhost"
)

type cli struct {
	ctx    context.Context
	stderr io.Writer
}

func (c *cli) errorf(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "Error: "+format+"\n", a...)
	return 1
}

// Help is the agent's help, for the command name ("mcp agent", "mcp-agent").
func Help(name string) *cmdhelp.Help {
	usage := strings.Replace(name, "mcp ", "mcp [global options] ", 1) + " [options]"
	return &cmdhelp.Help{Usage: usage,
		Text: `Runs the node executor on this machine: fetches the rendered config it is to run, applies
it safely (files and units through a confined root, daemon-reload, restarts, kernel
arguments, OS image), reboots when the steps say so and verifies after the boot
(docs/agent.md).

Without -node it runs standalone: the desired config is -desired, or the name in
ROOT/` + standalone.DesiredPath + `, fetched from -server; -once reconciles once and says what it did.
With -node it is the Kubernetes DaemonSet's agent: the Node's annotations say what to do
(docs/kubernetes.md).`,
		Groups: []cmdhelp.Group{{Title: "Agent options", Flags: []string{"root", "server", "server-ca", "server-token-file", "desired", "once", "interval", "listen"}},
			{Title: "Host options", Flags: []string{"host", "os-chroot", "os-tool", "cmdline", "booted-image", "boot-id-file", "allow", "reboot-wait"}},
			{Title: "Kubernetes options", Flags: []string{"node", "namespace", "kubeconfig", "in-cluster"}}},
		Exit: []string{"0  Stopped by an interrupt; with -once, the node is Done (or has nothing to do).",
			"1  An error; with -once, the node is Degraded.", "75  With -node: the node goes down for a reboot it asked for."},
		Examples: []string{name + " -once -root /mnt/node -server http://boot:8080 -host record"},
	}
}

// Run runs the agent with the command-line arguments args (after the command's name,
// which name gives for messages) until ctx ends, and returns the exit code. Its help (-h)
// goes to stdout, everything else to stderr.
func Run(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	c := &cli{ctx: ctx, stderr: stderr}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	root := fs.String("root", "/", "the node's filesystem root")
	server := fs.String("server", "", "boot server base URL; rendered configs are fetched from SERVER/rendered/NAME")
	desired := fs.String("desired", "", "rendered config to move to (default: the name in ROOT/"+standalone.DesiredPath+")")
	once := fs.Bool("once", false, "reconcile once and exit (non-zero when the node is Degraded)")
	interval := fs.Duration("interval", 30*time.Second, "time between reconciles when not -once")
	listen := fs.String("listen", "", "serve /healthz and /metrics on this address (e.g. :9101)")
	hostKind := fs.String("host", "systemd", "how units and the OS are driven: systemd (D-Bus, rpm-ostree) or record (log only; enabling links units in -root as systemctl would)")
	osChroot := fs.String("os-chroot", "", "run the kernel-argument, OS-image and health-check commands chrooted here (e.g. /host in a container)")
	osTool := fs.String("os-tool", "rpm-ostree", "with -host=systemd: the host's OS tool, rpm-ostree (Fedora CoreOS, RHCOS), bootc, or ostree (a plain OSTree host): it pivots and says which image is booted")
	cmdline := fs.String("cmdline", systemdhost.DefaultCmdline, "with -host=systemd: where the running kernel's arguments are read")
	booted := fs.String("booted-image", "", "with -host=record: the OS image the machine was first booted from (default none; its pivots are booted from ROOT/"+nodeexec.MachineDir+")")
	allow := fs.String("allow", strings.Join(nodeexec.DefaultAllowed, ","), "path prefixes the agent may write")
	bootID := fs.String("boot-id-file", "/proc/sys/kernel/random/boot_id", "where the running boot's id is read")
	rebootWait := fs.Duration("reboot-wait", 10*time.Minute, "after asking for a reboot, report Degraded if the machine is still up this long")
	node := fs.String("node", os.Getenv("NODE_NAME"), "run on Kubernetes as this Node's agent (default $NODE_NAME; unset: standalone)")
	namespace := fs.String("namespace", "mcp-system", "with -node: mcp's namespace, where the pools' command health checks are read (Secret mcp-health-checks)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	inCluster := fs.Bool("in-cluster", false, "use the pod's service account (the default when no kubeconfig is found)")
	serverCA := fs.String("server-ca", "", "PEM file of the CA that signed the boot server's certificate (an https -server)")
	serverToken := fs.String("server-token-file", "", "file with the boot server's bearer token (read at each request, so a renewed token is used)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			Help(name).Write(stdout, fs)
			return 0
		}
		return c.errorf("%v\n\nFor more help on using this command, run:\n  %s -h", err, name)
	}
	if fs.NArg() > 0 {
		return c.errorf("Too many command line arguments: %s takes none (got %q).\n\nFor more help on using this command, run:\n  %s -h", name, fs.Arg(0), name)
	}
	log := slog.New(slog.NewJSONHandler(c.stderr, nil))
	client, err := serverClient(*serverCA, *serverToken)
	if err != nil {
		return c.errorf("%v", err)
	}
	if *node != "" {
		if *once || *desired != "" {
			return c.errorf("-once and -desired are for the standalone agent; with -node the Node's annotations say what to do")
		}
		return c.kubeAgent(kubeAgentFlags{node: *node, namespace: *namespace, kubeconfig: *kubeconfig, inCluster: *inCluster, root: *root,
			server: *server, client: client, allow: *allow, listen: *listen, interval: *interval, rebootWait: *rebootWait,
			host: hostFlags{kind: *hostKind, root: *root, osChroot: *osChroot, osTool: *osTool, cmdline: *cmdline, booted: *booted, bootID: *bootID}}, log)
	}
	if *booted != "" && *hostKind != "record" {
		return c.errorf("-booted-image is for -host=record; a real host says which image it booted")
	}
	host, closeHost, err := newHost(c.ctx, hostFlags{kind: *hostKind, root: *root, osChroot: *osChroot, osTool: *osTool,
		cmdline: *cmdline, booted: *booted, bootID: *bootID}, log, nil)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer closeHost()
	s := standalone.New(*root, *server, host)
	s.Client = client
	s.Desired, s.BootIDPath, s.Log, s.Agent.RebootWait = *desired, *bootID, log, *rebootWait
	s.Agent.Exec.Allowed = strings.Split(*allow, ",")
	m := newAgentMetrics()
	if *listen != "" {
		stop, err := serveAgentHTTP(*listen, m.reg, log)
		if err != nil {
			return c.errorf("%v", err)
		}
		defer stop()
	}
	for {
		st, err := s.Reconcile(c.ctx)
		m.observe(st, err)
		if err != nil {
			log.Error("reconcile", "err", err.Error())
		}
		if *once {
			fmt.Fprintln(stdout, OnceLine(st, *root))
			if err != nil || st.State == "Degraded" {
				return 1
			}
			return 0
		}
		select {
		case <-c.ctx.Done():
			return 0
		case <-time.After(*interval):
		}
	}
}

// OnceLine says what one reconcile (-once) left the node at, for the person who ran it:
// nothing to do (no config desired, or the node runs it, drift aside), or its state on
// the config it moves to.
func OnceLine(st standalone.Status, root string) string {
	switch {
	case st.Desired == "" && st.Current == "":
		return fmt.Sprintf("Nothing to do: no rendered config is desired (give -desired NAME, or write its name to %s).",
			filepath.Join(root, standalone.DesiredPath))
	case st.State == "Degraded":
		return fmt.Sprintf("The node is Degraded on its way to %s: %s", st.Desired, st.Reason)
	case st.Current == st.Desired && len(st.Drift) > 0:
		parts := make([]string, len(st.Drift))
		for i, d := range st.Drift {
			parts[i] = d.String()
		}
		return fmt.Sprintf("The node runs %s (%s), and differs from it: %s.", st.Current, st.State, strings.Join(parts, "; "))
	case st.Current == st.Desired:
		return fmt.Sprintf("Nothing to do: the node runs %s (%s), as desired.", st.Current, st.State)
	}
	return fmt.Sprintf("The node is %s on its way from %s to %s.", st.State, cmp.Or(st.Current, "no config"), st.Desired)
}

// ExitRebooting is the exit code of `mcp agent -node` (and `mcp-agent -node`) when it stopped because the node is
// going down for a reboot it asked for; with -host=record no reboot comes, so this exit is
// the simulated machine going down (start the agent again with a new boot id to "boot").
const ExitRebooting = 75

type kubeAgentFlags struct {
	node, namespace, kubeconfig, root, server, allow, listen string
	client                                                   *http.Client
	inCluster                                                bool
	interval, rebootWait                                     time.Duration
	host                                                     hostFlags
}

// hostFlags say which Host the agent drives (newHost).
type hostFlags struct {
	kind, root, osChroot, osTool, cmdline, booted, bootID string
}

// kubeAgent is `mcp agent -node NAME`: the agent of a Kubernetes node (docs/kubernetes.md).
func (c *cli) kubeAgent(f kubeAgentFlags, log *slog.Logger) int {
	// Its first line: when the process began, before the kubeconfig and D-Bus (the time
	// from here to "agent" is theirs; docs/benchmarks.md reads both from the journal).
	log.Info("starting", "node", f.node)
	cfg, err := kubeconfig.Find(f.kubeconfig, f.inCluster)
	if err != nil {
		return c.errorf("%v", err)
	}
	nodes, err := nodeclient.New(cfg)
	if err != nil {
		return c.errorf("%v", err)
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	if f.host.booted != "" && f.host.kind != "record" {
		return c.errorf("-booted-image is for -host=record; a real host says which image it booted")
	}
	// The record host's machine goes down when asked to reboot: the agent stops, exit 75.
	host, closeHost, err := newHost(ctx, f.host, log, cancel)
	if err != nil {
		return c.errorf("%v", err)
	}
	defer closeHost()
	a := kagent.New(nodes, f.node, f.root, f.server, host)
	a.HTTP = f.client
	a.Log, a.Interval, a.Agent.RebootWait, a.State.BootIDPath = log, f.interval, f.rebootWait, f.host.bootID
	a.Agent.Exec.Allowed = strings.Split(f.allow, ",")
	// Command health checks run in the host's root where its OS commands do.
	a.Checks = &kagent.Checker{Secrets: nodes.Secrets(f.namespace), Namespace: f.namespace, Chroot: f.host.osChroot}
	m := newAgentMetrics()
	a.Observe = m.set
	if f.listen != "" {
		stop, err := serveAgentHTTP(f.listen, m.reg, log)
		if err != nil {
			return c.errorf("%v", err)
		}
		defer stop()
	}
	log.Info("agent", "node", f.node, "server", f.server, "root", f.root)
	if err := a.Run(ctx); errors.Is(err, nodeexec.ErrRebooting) {
		log.Info("stopping: the node is rebooting", "exit", ExitRebooting)
		return ExitRebooting
	} else if err != nil {
		return c.errorf("%v", err)
	}
	return 0
}

// newHost is the Host -host names. The record host stands in for a machine with no
// systemd: it logs each call, makes and removes units' enablement links in root as
// systemctl would (drift checks read them), and keeps the machine's booted and staged
// deployments in ROOT/run/mcp-record (nodeexec.MachineDir), booted at a change of the
// boot id; reboot, when set, is called when it is asked to reboot (the machine goes down).
func newHost(ctx context.Context, f hostFlags, log *slog.Logger, reboot func()) (nodeexec.Host, func(), error) {
	switch f.kind {
	case "systemd":
		cmds, err := systemdhost.CommandsFor(f.osTool)
		if err != nil {
			return nil, nil, fmt.Errorf("-os-tool: %w", err)
		}
		h, err := systemdhost.New(ctx)
		if err != nil {
			return nil, nil, err
		}
		h.Chroot, h.Commands, h.Cmdline = f.osChroot, cmds, f.cmdline
		// Each command that changes the host (the OS tool's pull, deploy, finalize…) is
		// logged with its time: what the node's slot spent where (docs/benchmarks.md).
		run := h.Run
		h.Run = func(ctx context.Context, argv []string) error {
			t0 := time.Now()
			err := run(ctx, argv)
			attrs := []any{"command", strings.Join(argv, " "), "took", time.Since(t0).Round(time.Millisecond).String()}
			if err != nil {
				attrs = append(attrs, "err", err.Error())
			}
			log.Info("ran", attrs...)
			return err
		}
		return h, h.Close, nil
	case "record":
		return &nodeexec.RecordingHost{Root: f.root, Booted: f.booted, Machine: filepath.Join(f.root, nodeexec.MachineDir),
			BootID: func() (string, error) { return nodeexec.ReadBootID(f.bootID) },
			OnCall: func(call string) error {
				log.Info("host", "call", call)
				if call == "reboot" && reboot != nil {
					reboot()
				}
				return nil
			}}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("-host %q: want systemd or record", f.kind)
}

type agentMetrics struct {
	reg        *prometheus.Registry
	reconciles *prometheus.CounterVec
	degraded   prometheus.Gauge
	drift      prometheus.Gauge
}

func newAgentMetrics() *agentMetrics {
	m := &agentMetrics{reg: prometheus.NewRegistry(),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mcp_agent_reconciles_total",
			Help: "Reconcile passes by result."}, []string{"result"}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcp_agent_degraded", Help: "1 when the node is Degraded."}),
		drift:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcp_agent_drifted_paths", Help: "Managed paths that differ from the current config, and its kernel arguments and OS image when the host runs others."}),
	}
	m.reg.MustRegister(m.reconciles, m.degraded, m.drift)
	return m
}

func (m *agentMetrics) observe(st standalone.Status, err error) {
	m.set(st.State, len(st.Drift), err)
}

// set records a pass that left the node in state with drifted paths (-1: not checked).
func (m *agentMetrics) set(state string, drifted int, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.reconciles.WithLabelValues(result).Inc()
	m.degraded.Set(map[bool]float64{true: 1, false: 0}[state == "Degraded"])
	if drifted >= 0 {
		m.drift.Set(float64(drifted))
	}
}

func serveAgentHTTP(addr string, reg *prometheus.Registry, log *slog.Logger) (func(), error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http", "err", err.Error())
		}
	}()
	return func() { srv.Close() }, nil
}
