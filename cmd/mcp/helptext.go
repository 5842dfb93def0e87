package main

import "github.com/mcpfleet/mcp/cmd/internal/cmdhelp"

// The option groups most commands share.
var (
	varOptions  = cmdhelp.Group{Title: "Common options", Flags: []string{"var", "var-file", "no-color", "input", "cluster"}}
	lockOptions = cmdhelp.Group{Title: "Lock options", Flags: []string{"lock", "lock-timeout"}}
	scopeGroup  = cmdhelp.Group{Title: "Scope options", Flags: []string{"target", "exclude"}}
	// soakGroup: plan's and apply's override of the soak gate (docs/fleets.md).
	soakGroup = cmdhelp.Group{Title: "Fleet options", Flags: []string{"ignore-soak"}}
)

const (
	configDirText = "The configuration is every *.hcl file of the working directory; to use another, give " +
		"the global option -chdir=DIR before the command."
	exitError = "1  An error: it is printed on standard error."
)

// helps are the commands' help, by command ("fleet set" for a fleet command): what mcp
// help CMD and mcp CMD -h print. The agent's is agentcmd's, shared with mcp-agent.
var helps = map[string]*cmdhelp.Help{
	"validate": {
		Usage: "mcp [global options] validate [options] [DIR]",
		Text: `Loads the configuration and renders every pool's config, as plan would, and checks each
pool's Ignition config with Ignition's own parser. Each problem is printed with its place,
FILE:LINE,COL, and the source around it. Nothing is refreshed, locked or changed.

DIR is the configuration directory (default: the working directory, or -chdir's).`,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"json", "no-color"}}, varOptions},
		Exit:   []string{"0  The configuration is valid (warnings may be printed).", "1  It has errors, or DIR cannot be read."},
		Examples: []string{"mcp validate",
			"mcp validate -json | jq '.diagnostics[]'  # the shape of terraform validate -json"},
	},
	"fmt": {
		Usage: "mcp [global options] fmt [options] [PATH...]",
		Text: `Rewrites configuration files in HCL's canonical format and lists the files it changed.
Each PATH is a *.hcl file or a directory, whose *.hcl files are formatted (default: the
configuration directory). A PATH that does not exist is an error.`,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"check"}}},
		Exit: []string{"0  Every file is formatted (or was rewritten).", "1  An error: a PATH that does not exist, a file that does not parse.",
			"3  With -check: some files are not formatted (listed on standard output), as terraform fmt -check."},
		Examples: []string{"mcp fmt -check  # in CI: fails with exit 3 on an unformatted file", "mcp fmt main.hcl configs.hcl"},
	},
	"import": {
		Usage: "mcp [global options] import machineconfig [options] FILE...",
		Text: `Writes configuration made for other tools as mcp configuration.

  machineconfig  the OpenShift Machine Config Operator's MachineConfig YAML

Run mcp import machineconfig -h for its help.`,
		Exit:     []string{"0  Written.", exitError},
		Examples: []string{"mcp import machineconfig 99-worker-chrony.yaml > chrony.hcl"},
	},
	"import machineconfig": {
		Usage: "mcp [global options] import machineconfig [options] FILE...",
		Text: `Reads MachineConfig YAML (one object, several documents, or a List as oc get -o yaml
prints; its rendered-POOL-HASH configs, the merge of the others, are left out with a
warning) and writes one config block per MachineConfig, named as it, with the MCO's
semantics: its Ignition config (spec 3.x, or 2.2 translated as the MCO does) as file
(content_base64 for bytes that are not UTF-8), directory, link, unit and
ssh_authorized_keys blocks, and what only first boot does (users, disks, files under
/home…) as an ignition attribute, with a warning; spec.kernelArguments split as the MCO
splits them, osImageURL as os_image, and the pool the
machineconfiguration.openshift.io/role label names. What mcp cannot do
(kernelType realtime or 64k-pages, extensions, fips: true) is refused with its line and
column, and nothing is written. The MCO's generated configs (00-POOL, 01-POOL-kubelet…)
are imported, as the nodes carry them; -skip-generated leaves them out. A config block can
also read a MachineConfig as it is: machineconfig = file("99-worker-chrony.yaml")
(docs/configuration.md). Migrating a pool from the MCO: docs/migrate-from-mco.md.`,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"out", "pool", "skip-generated"}}},
		Exit:   []string{"0  Written (warnings may be printed on standard error).", "1  A MachineConfig is refused, or a FILE cannot be read: nothing is written."},
		Examples: []string{"mcp import machineconfig 99-worker-chrony.yaml > chrony.hcl",
			"oc get machineconfig -l machineconfiguration.openshift.io/role=worker -o yaml > mcs.yaml && mcp import machineconfig -out worker.hcl mcs.yaml"},
	},
	"plan": {
		Usage: "mcp [global options] plan [options]",
		Text: `Refreshes the fleet through the configured provider and shows what mcp apply would do:
per pool its rendered config, budget (max_unavailable) and waves; per changing node its
steps (cordon, drain, write, restart, reboot, …), its wave and what blocks it; then what
each move of the pool's nodes changes — every file and unit as a unified diff, the kernel
arguments and OS image removed and added — once per pool, and why each step is needed.
Drift (changes made outside mcp) is shown apart, before the actions.

In a configuration of clusters (docs/fleets.md) it plans every cluster, or those -cluster
names: a summary line, a row per cluster, each change once per rendered config with what
differs per cluster and the cluster value (file:line) that made it differ, then each
cluster's plan; a cluster that cannot be reached is shown as unknown with the reason. -json
and -out hold every cluster's plan (docs/plan-json.md).

` + configDirText + ` The plan takes the state lock while it reads the state.`,
		Groups: []cmdhelp.Group{{Title: "Plan options", Flags: []string{"out", "json", "detailed-exitcode", "no-color"}},
			scopeGroup, soakGroup, varOptions, lockOptions},
		Exit: []string{"0  Success; with -detailed-exitcode: apply would change nothing.",
			"1  An error, a plan that apply will refuse, or a cluster unknown (printed all the same).",
			"2  With -detailed-exitcode: apply would change a node or pool, drift restores included;",
			"   with -detailed-exitcode=config: the configuration asks for changes (restores do not count)."},
		Examples: []string{"mcp plan -out=tfplan  # then review with mcp show tfplan, and apply with mcp apply tfplan",
			"mcp -chdir=clusters/prod plan -var ntp_server=ntp.internal",
			"mcp plan -target=pool.infra -exclude=node.infra-3",
			"mcp plan -cluster canary -cluster staging  # two clusters of a fleet"},
	},
	"apply": {
		Usage: "mcp [global options] apply [options] [PLANFILE]",
		Text: `Carries out a plan. With PLANFILE (from mcp plan -out) it derives the plan again from the
configuration, the state and a fresh refresh, refuses the saved one unless it is exactly
that, and does it. Without one it plans, shows the plan and asks for "yes" (-auto-approve
does not ask); before its first node it derives the plan again, and does that when it does
no more than the plan shown (nodes at their target since drop out, named), else starts
nothing, naming what moved (exit 2). Each pool's nodes are updated within its max_unavailable; each node is
claimed, cordoned and drained when its steps need it, updated by its agent, checked by its
health gates, and uncordoned. A pool's alert_gate holds its next node while Prometheus
reports alerts it counts firing, and stops the pool when one fires after a node. A pool
with on_failure = "revert" then puts the nodes this apply changed in it back on the config
they ran before, within its max_unavailable, and apply exits 1 naming them.

On a terminal the progress is a line per pool and per node in progress, redrawn in place;
elsewhere, one line per step. An interrupt lets started nodes finish and saves the state.

In a configuration of clusters (docs/fleets.md) it applies every cluster's plan (one approval
for all) in stage order, a stage's clusters up to its concurrency at once; it stops once
more of a stage's clusters failed or moved on since a saved plan than its
max_failed_clusters (default 0; starting no cluster after that), before a stage whose
cluster was unknown, before a stage with approval = true unless -approve-stage names it,
and after a stage with a soak whose clusters changed, naming when the next stage may go.`,
		Groups: []cmdhelp.Group{{Title: "Apply options", Flags: []string{"auto-approve", "json", "no-color"}},
			{Title: "Rollout options", Flags: []string{"parallelism", "drain-timeout", "drain-retry-delay", "budget-wait", "health-timeout", "no-wait"}},
			scopeGroup, {Title: soakGroup.Title, Flags: append([]string{"approve-stage"}, soakGroup.Flags...)}, varOptions, lockOptions},
		Exit: []string{"0  Every planned node change is done and verified.",
			"1  A node failed (a step, its agent, a health gate), or apply itself did (an alert gate's Prometheus not answering, too).",
			"2  Nothing failed, but planned node changes were not done (deferred, not started, not confirmed, a promotion stopped for a soak or an approval): run apply again."},
		Examples: []string{"mcp apply tfplan", "mcp apply -auto-approve -json | jq -c 'select(.type==\"apply_progress\")'"},
	},
	"rollback": {
		Usage: "mcp [global options] rollback [options] POOL...",
		Text: `Rolls each POOL back to the rendered config it ran before its current one (the state keeps
each pool's last 10), or to -to's: a normal plan - diffs, steps, waves, budget - whose
target is that stored config, shown and asked for "yes" as apply's, and carried out by
apply's engine under the pool's max_unavailable and the state lock. The configuration is
not changed: plan and status warn about the pool, and a plain plan goes forward again to
what the configuration renders, until it renders the rolled-back config again. With -out
the plan is saved for mcp apply FILE instead of applied.`,
		Groups: []cmdhelp.Group{{Title: "Rollback options", Flags: []string{"to", "out", "auto-approve", "json", "no-color"}},
			{Title: "Rollout options", Flags: []string{"parallelism", "drain-timeout", "drain-retry-delay", "budget-wait", "health-timeout", "no-wait"}},
			varOptions, lockOptions},
		Exit: []string{"0  Rolled back (every planned node change done and verified), saved with -out, or nothing to do.",
			"1  An error (no earlier config, -to naming none stored), or a node failed.",
			"2  Nothing failed, but planned node changes were not done: run it again."},
		Examples: []string{"mcp rollback worker",
			"mcp rollback -to rendered-worker-3f2a… worker",
			"mcp rollback -out rb.plan worker infra  # review with mcp show rb.plan, then mcp apply rb.plan"},
	},
	"show": {
		Usage: "mcp [global options] show [options] PLANFILE\n       mcp [global options] show -rendered [-json] POOL",
		Text: `Shows a saved plan (PLANFILE, from mcp plan -out): every pool and node, each change as a
diff, and every step with its reason; with -json as Terraform-shaped plan JSON
(docs/plan-json.md), with -markdown as a summary for a pull-request comment, its diffs
folded.

With -rendered, shows the rendered config of POOL instead: who wrote each file, unit and
kernel argument, then its Ignition config (with -json, the whole rendered object).
Sensitive files' content is never shown.`,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"json", "markdown", "rendered", "no-color"}}, varOptions},
		Exit:   []string{"0  Shown.", exitError},
		Examples: []string{"mcp show tfplan", "mcp show -json tfplan | opa eval -I -d policy/ 'data.mcp.reboots.deny'",
			"mcp show -rendered -json worker | jq .ignition"},
	},
	"drift": {
		Usage: "mcp [global options] drift [options]",
		Text: `Refreshes the fleet and reports, node by node, how each differs from the rendered config
it runs: files (a diff of their content where the node's can be read), units, kernel
arguments, OS image; nodes no pool selects; nodes on a config the state no longer holds.
It takes no lock and writes nothing, so it runs beside an apply. With -every it runs
periodically and serves Prometheus metrics (-listen).

` + configDirText,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"json", "detailed-exitcode", "no-color"}},
			{Title: "Periodic options", Flags: []string{"every", "listen"}}, varOptions},
		Exit: []string{"0  Done; with -detailed-exitcode: no drift.", exitError,
			"2  With -detailed-exitcode: some node drifted, is unmanaged, on an unknown config, or",
			"   changed since its rollout in what no config manages (information)."},
		Examples: []string{"mcp drift -detailed-exitcode", "mcp drift -every 10m -listen :9102"},
	},
	"status": {
		Usage: "mcp [global options] status [options]",
		Text: `Shows each pool as oc get mcp does: NAME, CONFIG, the conditions UPDATED, UPDATING and
DEGRADED (True/False), MACHINECOUNT, READYMACHINECOUNT, UPDATEDMACHINECOUNT,
DEGRADEDMACHINECOUNT and AGE; -o wide adds UPDATINGMACHINECOUNT, DRIFTEDMACHINECOUNT,
HELDMACHINECOUNT and PAUSED. With -nodes, each node: NAME, POOL, CONFIG, STATE, CONDITION,
HELD, AGE and REASON (-o wide adds DESIRED and DRIFTED). One refresh and one read of the
state, no lock: it watches a running apply. docs/status.md says what each column counts.`,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"o", "output", "nodes", "watch", "w", "no-headers", "json", "no-color"}}, varOptions},
		Exit:   []string{"0  Shown.", exitError},
		Examples: []string{"mcp status", "mcp status -nodes -o wide", "mcp status -o json | jq '.pools[] | select(.degraded > 0)'",
			"mcp status -o jsonpath='{.pools[*].name}'", "mcp status -nodes --no-headers | awk '$4 != \"Done\"'",
			"mcp status -w  # follow a rollout; interrupt to stop"},
	},
	"graph": {
		Usage: "mcp [global options] graph [options] [PLANFILE]",
		Text: `Prints a plan's action graph in Graphviz DOT, as terraform graph does: pools as
clusters, each changing node's steps as a chain, waves as ranks, blockers in red with their
reason. Without PLANFILE it plans as mcp plan does.`,
		Groups:   []cmdhelp.Group{varOptions, lockOptions},
		Exit:     []string{"0  Printed.", exitError},
		Examples: []string{"mcp graph | dot -Tsvg > plan.svg"},
	},
	"fleet": {
		Usage: "mcp [global options] fleet <init|add|set|list|events> [options] [args]",
		Text: `Creates and changes a local fleet: node directories the local provider rolls out to, with
simulated drains and reboots (docs/fleet-format.md).

  init    create a fleet
  add     make a node of a pool and boot it as a machine would
  set     change a node's observed state, or inject a failure
  list    list the fleet's nodes
  events  print the nodes' event logs

Run mcp fleet <command> -h for a command's help.`,
		Exit:     []string{"0  Done.", exitError},
		Examples: []string{"mcp fleet init fleet -nodes worker=4,infra=2 -zones a,b,c -workloads", "mcp fleet set worker-2 ready=false"},
	},
	"fleet init": {
		Usage: "mcp [global options] fleet init [options] DIR",
		Text:  `Creates a local fleet in DIR: per pool its nodes, each a directory with its observed state and a root/ that is its filesystem.`,
		Exit:  []string{"0  Created.", exitError},
		Examples: []string{"mcp fleet init fleet -nodes worker=4,infra=2 -zones a,b,c -workloads  " +
			"# with pods and a PodDisruptionBudget, so a drain can be blocked"},
	},
	"fleet add": {
		Usage: "mcp [global options] fleet add [options] NODE",
		Text: `Makes NODE (a DNS-1123 subdomain) a node of -pool in the configuration's local fleet and
boots it as a machine would: the pool's served Ignition config (from mcp serve with
-server, else built from the state) — a machine block named NODE gets its own, by its
selectors —, then the agent's first boot, which pivots to the pool's OS image when the
boot image is older.`,
		Groups:   []cmdhelp.Group{{Title: "Options", Flags: []string{"pool", "boot-image", "zone", "server"}}, varOptions},
		Exit:     []string{"0  The node is added and booted.", exitError},
		Examples: []string{"mcp fleet add worker-4 -pool worker -zone b"},
	},
	"fleet set": {
		Usage: "mcp [global options] fleet set [options] NODE KEY=VALUE...",
		Text: `Changes NODE's observed state in a local fleet, as a cluster would see it change. Every
KEY=VALUE is checked before anything is written. The keys:

  ready=true|false            the node's Ready condition
  unschedulable=true|false    cordoned
  zone=Z                      its zone (a label value)
  hold=REASON                 the mcpfleet.io/hold annotation, which keeps it out of
                              rollouts (hold= lifts it; true and false are refused)
  label.K=V, label.K-         set or remove a label
  current_config=NAME         the rendered config it runs
  desired_config=NAME         the rendered config it was told to move to
  os_image=IMAGE              the OS image it reports
  kernel_args=A,B             its kernel arguments (kernel_args= clears them)
  boot_image=IMAGE            the image it first booted from
  state=Done|Working|Degraded its agent's report
  reason=TEXT                 the report's reason
  claim-                      clear the claim an apply left, as mcp unclaim does
                              (refused, unless -force, while its apply may still run)

Failures to inject (fault.K- removes one):

  fault.write=PATH|*          writing PATH fails
  fault.restart=UNIT|*        restarting UNIT fails
  fault.reboot=hang|rollback  the reboot hangs, or comes back on the old config
  fault.drain=pdb             the drain is refused as by a PodDisruptionBudget`,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"fleet", "force"}}},
		Exit:   []string{"0  Changed.", exitError},
		Examples: []string{"mcp fleet set worker-2 ready=false", "mcp fleet set worker-1 fault.reboot=hang label.tier=gold",
			"mcp fleet set worker-3 claim-  # the apply that claimed it is gone"},
	},
	"fleet list": {
		Usage:  "mcp [global options] fleet list [options]",
		Text:   `Lists the local fleet's nodes: zone, ready, schedulable, current config and state.`,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"fleet"}}},
		Exit:   []string{"0  Listed.", exitError},
	},
	"fleet events": {
		Usage: "mcp [global options] fleet events [options] [NODE]",
		Text: `Prints the nodes' event logs (or NODE's), oldest first: claim, cordon, drain, working,
reboot (boot ids), NotReady, Ready, done, uncordon, release — written by the fleet itself.`,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"fleet"}}},
		Exit:   []string{"0  Printed.", exitError},
	},
	"serve": {
		Usage: "mcp [global options] serve [options]",
		Text: `Runs the boot server: each pool's Ignition config for first boot (the spec negotiated from
Accept) and the rendered configs for agents, following the state (a local state file, or
the cluster's Secrets). It runs until interrupted (docs/boot-server.md).`,
		Groups: []cmdhelp.Group{{Title: "Server options", Flags: []string{"listen", "tls-cert", "tls-key", "token-file", "first-boot-agent"}},
			{Title: "FleetLock options", Flags: []string{"fleetlock", "fleetlock-lease"}},
			{Title: "State options", Flags: []string{"state", "poll"}}, varOptions},
		Exit:     []string{"0  Stopped by an interrupt.", exitError},
		Examples: []string{"mcp serve -listen :8443 -tls-cert server.pem -tls-key server-key.pem -token-file token"},
	},
	"pointer": {
		Usage: "mcp [global options] pointer [options] POOL",
		Text: `Prints the Ignition pointer config (user-data) that makes a machine boot as a node of POOL
from mcp serve at -url. POOL must be a pool of the configuration. With -machine NAME (a
machine block of POOL) the config URL carries the machine's selectors (?mac=…&uuid=…&hostname=…),
so the machine boots its own config: per-instance user data (docs/boot-server.md, "Machines").`,
		Groups: []cmdhelp.Group{{Title: "Options", Flags: []string{"url", "ca", "token-file", "machine"}}, varOptions},
		Exit:   []string{"0  Printed.", exitError},
		Examples: []string{"mcp pointer worker -url https://boot.example:8443 -ca ca.pem -token-file token > worker.ign",
			"mcp pointer worker -url https://boot.example:8443 -machine worker-9 > worker-9.ign"},
	},
	"prune": {
		Usage: "mcp [global options] prune [options]",
		Text: `Deletes the stored rendered configs nothing uses any more. Kept, each printed with the
reason: the pools' and machine blocks' boot configs, every node's current and desired
config, an unfinished apply's, what the configuration renders now, and each pool's
rollback history (its last 10 configs). Runs under the state lock.`,
		Groups:   []cmdhelp.Group{{Title: "Options", Flags: []string{"dry-run"}}, varOptions, lockOptions},
		Exit:     []string{"0  Pruned (or nothing to prune).", exitError},
		Examples: []string{"mcp prune -dry-run"},
	},
	"force-unlock": {
		Usage: "mcp [global options] force-unlock [options] LOCK_ID",
		Text: `Removes the state lock LOCK_ID (the ID the lock error printed) whose holder is gone. When
the holder looks alive, it says so and asks for "yes" on a terminal, and refuses without
one unless -force.`,
		Groups:   []cmdhelp.Group{{Title: "Options", Flags: []string{"force"}}, varOptions},
		Exit:     []string{"0  Unlocked.", "1  An error, or not confirmed."},
		Examples: []string{"mcp force-unlock 6f2a9c0e-…"},
	},
	"unclaim": {
		Usage: "mcp [global options] unclaim [options] NODE...",
		Text: `Clears the claim another apply holds on each NODE (a Node's mcpfleet.io/claim annotation, a
local node's node.json claim), as apply would take it over: for a claim nothing else ends
soon enough, its apply killed on a machine whose processes cannot be checked from here. A
claim whose apply may still work on the node — its process runs here, the state lock it
was taken under is held, or its expiry has not passed — is refused unless -force. The
claim stays on the node as a released record (docs/decisions.md, "One apply per node").`,
		Groups:   []cmdhelp.Group{{Title: "Options", Flags: []string{"force"}}, varOptions},
		Exit:     []string{"0  Cleared, or no apply held the nodes.", "1  An error, or a claim not cleared."},
		Examples: []string{"mcp unclaim worker-2", "mcp unclaim -force worker-2 worker-3  # their apply's machine is gone"},
	},
	"version": {
		Usage: "mcp [global options] version",
		Text:  `Prints mcp's version.`,
		Exit:  []string{"0  Printed."},
	},
	"help": {
		Usage: "mcp help [COMMAND]",
		Text:  `Prints the help of COMMAND ("fleet set" for a fleet command), or mcp's commands.`,
		Exit:  []string{"0  Printed.", "1  No such command."},
	},
}
