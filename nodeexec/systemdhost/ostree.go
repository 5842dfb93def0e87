package systemdhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpfleet/mcp/nodeexec"
)

// ToolOSTree names the OS tool of a plain OSTree host, one with ostree and no rpm-ostree
// or bootc (a Debian or other distribution made an OSTree system): CommandsFor("ostree").
const ToolOSTree = "ostree"

// OSTreeCommands drive a plain OSTree host with `ostree admin`. Its images are OSTree
// commits, named as the pool's os_image (ParseOSTreeImage): REMOTE:REF, a local REF, or a
// commit checksum, bare or as REMOTE:CHECKSUM. Both a pivot and a kernel-argument change
// deploy a new default deployment (`ostree admin deploy`, not staged: its boot entry is on
// disk when the command returns, so a power loss after it still boots the update), with
// the origin refspec set to the image's name, which is how the booted image is read back.
// Kernel arguments: those of the deployment that boots next, with the changes asked of
// this agent, given in full (--karg-none, --karg-append), since ostree would otherwise take
// them from the booted deployment and a pivot after a kargs step would drop the kargs.
var OSTreeCommands = Commands{Tool: ToolOSTree, Status: []string{"ostree", "admin", "status"}}

// ostreeState is what this agent asked of the next boot in its process: a kargs step and
// a pivot of one update each deploy, and the later must carry the earlier's changes.
type ostreeState struct {
	image string // the image a pivot asked for; "" for the booted one
	rev   string // the commit of image a staged deployment has; "": resolve image
	// kargs: the staged deployment's kernel arguments, what this update's stage asked;
	// nil: the next boot's, changed by add and remove
	kargs       []string
	add, remove []string
}

// OSTreeDeployment is one deployment in `ostree admin status`.
type OSTreeDeployment struct {
	Stateroot string
	Checksum  string
	Serial    int
	Booted    bool
	Pending   bool // a deployment before the booted one: it boots next
	Staged    bool // written at shutdown (ostree admin deploy --stage)
	Rollback  bool
	Version   string
	Refspec   string // "origin refspec"; "" when the origin has none
}

var deploymentLine = regexp.MustCompile(`^([* ]) (\S+) ([0-9a-f]{64})\.(\d+)(?: \(([a-z, ]+)\))?$`)

// ParseOSTreeStatus reads `ostree admin status` (ostree 2022.7 has no JSON output): a line
// per deployment, "* " in front of the booted one, "STATEROOT CHECKSUM.SERIAL" and markers
// in parentheses (pending, staged, rollback), then indented "Key: value" lines, of which
// "Version:" and "origin refspec:" are read.
func ParseOSTreeStatus(out []byte) ([]OSTreeDeployment, error) {
	var ds []OSTreeDeployment
	for i, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if m := deploymentLine.FindStringSubmatch(line); m != nil {
			serial, _ := strconv.Atoi(m[4])
			d := OSTreeDeployment{Stateroot: m[2], Checksum: m[3], Serial: serial, Booted: m[1] == "*"}
			for _, mark := range strings.Split(m[5], ",") {
				switch strings.TrimSpace(mark) {
				case "pending":
					d.Pending = true
				case "staged":
					d.Staged, d.Pending = true, true
				case "rollback":
					d.Rollback = true
				}
			}
			ds = append(ds, d)
			continue
		}
		key, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		switch {
		case strings.TrimSpace(line) == "":
		case !strings.HasPrefix(line, "    ") || len(ds) == 0:
			if len(ds) == 0 && strings.HasPrefix(strings.TrimSpace(line), "No deployments") {
				return nil, nil
			}
			return nil, fmt.Errorf("ostree admin status, line %d: %q is neither a deployment nor one of its fields", i+1, line)
		case ok && key == "Version":
			ds[len(ds)-1].Version = strings.TrimSpace(value)
		case ok && key == "origin refspec":
			ds[len(ds)-1].Refspec = strings.TrimSpace(value)
		}
	}
	return ds, nil
}

// OSTreeBootedImageOf reads `ostree admin status`: the booted deployment's image, as pools
// name it — its origin refspec (REMOTE:REF, REF, or the checksum a commit was deployed
// by), or its checksum when its origin names none.
func OSTreeBootedImageOf(status []byte) (string, error) {
	ds, err := ParseOSTreeStatus(status)
	if err != nil {
		return "", fmt.Errorf("reading the booted OS image: %w", err)
	}
	for _, d := range ds {
		if d.Booted {
			if d.Refspec != "" {
				return d.Refspec, nil
			}
			return d.Checksum, nil
		}
	}
	return "", errors.New("reading the booted OS image: ostree admin status lists no booted deployment (is this an OSTree boot?)")
}

var checksumRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// OSTreeImage is an os_image of a plain OSTree pool, split.
type OSTreeImage struct {
	Remote string // "" for the local repository
	Rev    string // a ref or a commit checksum
}

// ParseOSTreeImage splits an os_image of an OSTree pool: "REMOTE:REF" and
// "REMOTE:CHECKSUM" are pulled from the remote REMOTE of the node's repository before they
// are deployed; "REF" and "CHECKSUM" must be in it already.
func ParseOSTreeImage(image string) (OSTreeImage, error) {
	remote, rev, ok := strings.Cut(image, ":")
	if !ok {
		remote, rev = "", image
	}
	switch {
	case rev == "" || (ok && remote == ""):
		return OSTreeImage{}, fmt.Errorf("OS image %q: an OSTree pool's os_image is REMOTE:REF, REF or a commit checksum", image)
	case strings.ContainsAny(image, " \t\n") || strings.HasPrefix(rev, "-") || strings.HasPrefix(remote, "-"):
		return OSTreeImage{}, fmt.Errorf("OS image %q: not an OSTree ref (no blanks, no leading -)", image)
	}
	return OSTreeImage{Remote: remote, Rev: rev}, nil
}

func (i OSTreeImage) commit() bool { return checksumRE.MatchString(i.Rev) }

// ostreeKargs is SetKernelArgs on an OSTree host: the booted image deployed again, with
// the changes asked.
func (h *Host) ostreeKargs(ctx context.Context, add, remove []string, pivot string) error {
	h.ostree.add, h.ostree.remove = slices.Clone(add), slices.Clone(remove)
	h.ostree.rev, h.ostree.kargs = "", nil // a staged deployment's, asked by a pivot before
	// A deployment this update staged for the image its pivot moves to next, with these
	// arguments: the pivot deploys it with them. Deploying the booted image now would also
	// remove the staged deployment (ostree keeps the booted and the new one), and the pivot
	// would have to deploy again from scratch. Any other staged deployment (one a stopped
	// apply left for an image the plan no longer wants, with no pivot following) is
	// replaced by the deploy: it must not keep these arguments from the next boot.
	if d, err := h.ostreeStagedFor(ctx, add, remove, pivot); err != nil {
		return fmt.Errorf("kernel arguments: %w", err)
	} else if d != nil {
		return nil
	}
	if err := h.ostreeDeploy(ctx); err != nil {
		return fmt.Errorf("kernel arguments: %w", err)
	}
	return nil
}

// ostreePivot pulls the image when it names a remote and deploys it. A deployment staged
// before the slot for this image and these kernel arguments (ostreeStage) spares the
// pull: its commit is in the repository, and the very commit staged is deployed.
func (h *Host) ostreePivot(ctx context.Context, image string) error {
	img, err := ParseOSTreeImage(image)
	if err != nil {
		return fmt.Errorf("pivot: %w", err)
	}
	h.ostree.image, h.ostree.rev, h.ostree.kargs = image, "", nil
	staged, err := h.ostreeStaged(ctx, image)
	if err != nil {
		h.ostree.image = ""
		return fmt.Errorf("pivot to %s: %w", image, err)
	}
	h.ostree.image = ""
	if staged != nil {
		if err := h.ostreeFinalize(ctx, staged); err != nil {
			return fmt.Errorf("pivot to %s (staged %s.%d): %w", image, staged.Checksum, staged.Serial, err)
		}
		// Its commit and its kernel arguments, as this update's stage asked them: a kargs
		// step before, which left the staged deployment to this pivot, may have run in an
		// agent that has since restarted. A later deploy of this process keeps them.
		h.ostree.image, h.ostree.rev, h.ostree.kargs = image, staged.Checksum, unmark(staged.mark)
		return nil
	}
	if img.Remote != "" {
		if err := h.run(ctx, []string{"ostree", "pull", img.Remote, img.Rev}); err != nil {
			return fmt.Errorf("pivot to %s: %w", image, err)
		}
	}
	h.ostree.image = image
	if err := h.ostreeDeploy(ctx); err != nil {
		h.ostree.image = ""
		return fmt.Errorf("pivot to %s: %w", image, err)
	}
	return nil
}

// ostreeDeploy deploys what this agent asked for: the pivot's image (else the booted
// one) with the kernel arguments of the entry that boots next, changed as asked.
func (h *Host) ostreeDeploy(ctx context.Context) error { return h.ostreeWrite(ctx, false) }

// ostreeWrite is ostreeDeploy as the new default deployment, or, staging, appended after
// the booted one and marked as staged by mcp in its origin (ostreeStage).
func (h *Host) ostreeWrite(ctx context.Context, staging bool) error {
	ds, err := h.ostreeStatus(ctx)
	if err != nil {
		return err
	}
	var booted *OSTreeDeployment
	for i := range ds {
		if ds[i].Booted {
			booted = &ds[i]
		}
	}
	if booted == nil {
		return errors.New("ostree admin status lists no booted deployment")
	}
	image, rev := h.ostree.image, booted.Checksum
	switch {
	case image == "":
		image = booted.Refspec
	case h.ostree.rev != "":
		rev = h.ostree.rev
	default:
		img, _ := ParseOSTreeImage(image)
		if rev, err = h.ostreeResolve(ctx, img); err != nil {
			return err
		}
	}
	kargs, err := NextBootKernelArgs(filepath.Join(h.Chroot, "/boot/loader/entries"))
	if err != nil {
		return err
	}
	// The entry's arguments are read as the kernel reads them; the config's may be quoted:
	// WithArgs takes the two forms as one argument.
	want := nodeexec.WithArgs(kargs, h.ostree.add, h.ostree.remove)
	if h.ostree.kargs != nil && !staging {
		want = slices.Clone(h.ostree.kargs)
	}
	// A staged deployment is not the next boot's (its boot entry is written when it is
	// finalized): a pivot that did not take it deploys anew, which drops it.
	if next := ds[0]; !next.Staged && next.Checksum == rev && (next.Refspec == image || image == "") && slices.Equal(want, kargs) {
		return nil // the next boot is already as asked: a resumed step deploys nothing
	}
	argv := []string{"ostree", "admin", "deploy", "--os=" + booted.Stateroot}
	if staging {
		// ostree keeps one staged deployment: one as asked is kept (a stage run again);
		// any other — an update the plan no longer wants, another tool's — is replaced.
		// The finalization lock first, kept (a staged deployment whose lock is gone would
		// be finalized by any shutdown): a reboot before the slot, by a power cut or
		// another tool, boots the running deployment, never the staged one, which is lost
		// with /run.
		if err := h.lockFinalization(); err != nil {
			return err
		}
		staged, err := h.ostreeStagedDeployments(ctx, ds)
		if err != nil {
			return err
		}
		for _, d := range staged {
			if d.Checksum == rev && d.Refspec == orRev(image, rev) && d.mark == stagedMark(want) {
				return nil
			}
		}
		// The finalization keeps the staged deployment and the booted one and deletes the
		// rest (--retain is not kept for it): the rollback's deletion, a tree's worth of
		// files (3-6 s on the VM nodes), is done now, in service, rather than in the slot.
		// Until the switch the node has no rollback deployment; the one it runs is known
		// to boot.
		for i := len(ds) - 1; i >= 0 && !ds[i].Booted; i-- {
			if ds[i].Staged {
				continue
			}
			if err := h.run(ctx, []string{"ostree", "admin", "undeploy", strconv.Itoa(i)}); err != nil {
				return fmt.Errorf("undeploying the rollback deployment %s.%d: %w", ds[i].Checksum, ds[i].Serial, err)
			}
		}
		argv = append(argv, "--stage")
	}
	argv = append(argv, "--karg-none")
	for _, k := range want {
		argv = append(argv, "--karg-append="+nodeexec.FormatCmdline([]string{k})) // a blank in it stays in one argument
	}
	if staging || (image != "" && image != rev) {
		origin, err := h.originFile(orRev(image, rev), staging, want)
		if err != nil {
			return err
		}
		defer os.Remove(origin)
		argv = append(argv, "--origin-file="+strings.TrimPrefix(origin, h.Chroot))
	}
	return h.run(ctx, append(argv, rev))
}

// ostreeResolve is the commit an image names in the node's repository (after its pull).
func (h *Host) ostreeResolve(ctx context.Context, img OSTreeImage) (string, error) {
	if img.commit() {
		return img.Rev, nil
	}
	ref := img.Rev
	if img.Remote != "" {
		ref = img.Remote + ":" + img.Rev
	}
	out, err := h.output(ctx, []string{"ostree", "rev-parse", ref})
	if err != nil {
		return "", err
	}
	rev := strings.TrimSpace(string(out))
	if !checksumRE.MatchString(rev) {
		return "", fmt.Errorf("ostree rev-parse %s printed %q, not a commit checksum", ref, rev)
	}
	return rev, nil
}

// originFile writes the origin of a deployment of image (in the chroot's /tmp): ostree
// records its refspec, which is how the booted image is read back.
func (h *Host) originFile(image string, staged bool, kargs []string) (string, error) {
	f, err := os.CreateTemp(filepath.Join(h.Chroot, "/tmp"), "mcp-origin-*")
	if err != nil {
		return "", fmt.Errorf("writing the deployment's origin: %w", err)
	}
	text := fmt.Sprintf("[origin]\nrefspec=%s\n", image)
	if staged {
		// ostree keeps the origin's other groups: what marks a deployment as mcp's
		// staged one, and for which kernel arguments (ostreeMark).
		text += "\n[mcp]\n" + stagedKey + "=" + stagedMark(kargs) + "\n"
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing the deployment's origin: %w", err)
	}
	return f.Name(), nil
}

// ostreeUnstage undeploys every deployment that would boot before the booted one (index 0
// while it is not booted): what a kargs or pivot step of a failed update deployed.
func (h *Host) ostreeUnstage(ctx context.Context) error {
	h.ostree = ostreeState{}
	for range 4 { // a deploy leaves at most one pending; a few, by hand, are removed too
		ds, err := h.ostreeStatus(ctx)
		if err != nil {
			return fmt.Errorf("unstage: %w", err)
		}
		// A staged deployment (ostreeStage's) is listed first and pending too: undeployed
		// like one a kargs or pivot step wrote. A deployment after the booted one is a
		// rollback, even when its origin still carries a stage's mark.
		if len(ds) == 0 || ds[0].Booted || !ds[0].Pending {
			return nil
		}
		if err := h.run(ctx, []string{"ostree", "admin", "undeploy", "0"}); err != nil {
			return fmt.Errorf("unstage: %w", err)
		}
	}
	return errors.New("unstage: deployments still pending after undeploying four")
}

// stagedKey is the key of the origin's [mcp] group that marks a deployment ostreeStage
// wrote; its value is stagedMark of the deployment's kernel arguments.
const stagedKey = "staged-kargs"

// stagedMark is the mark of a staged deployment with kernel arguments kargs.
func stagedMark(kargs []string) string {
	if len(kargs) == 0 {
		return "-"
	}
	return strings.NewReplacer("\\", "\\\\", "\n", "\\n").Replace(nodeexec.FormatCmdline(kargs))
}

// unmark is the kernel arguments of a staged mark (stagedMark), never nil.
func unmark(mark string) []string {
	if mark == "-" {
		return []string{}
	}
	var b strings.Builder
	for i := 0; i < len(mark); i++ {
		if mark[i] == '\\' && i+1 < len(mark) {
			i++
			if mark[i] == 'n' {
				b.WriteByte('\n')
				continue
			}
		}
		b.WriteByte(mark[i])
	}
	return append([]string{}, nodeexec.ParseCmdline(b.String())...)
}

func orRev(image, rev string) string {
	if image == "" {
		return rev
	}
	return image
}

// ostreeMark reads the [mcp] staged mark of deployment d's origin ("" for none): the origin
// file, read through the OS (in the host's root), as ostree keeps it.
func (h *Host) ostreeMark(ctx context.Context, d OSTreeDeployment) (string, error) {
	path := fmt.Sprintf("/ostree/deploy/%s/deploy/%s.%d.origin", d.Stateroot, d.Checksum, d.Serial)
	out, err := h.output(ctx, []string{"cat", path})
	if err != nil {
		return "", fmt.Errorf("reading the origin of deployment %s.%d: %w", d.Checksum, d.Serial, err)
	}
	group := ""
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			group = line
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && group == "[mcp]" && strings.TrimSpace(k) == stagedKey {
			return strings.TrimSpace(v), nil
		}
	}
	return "", nil
}

// stagedDeployment is a deployment ostreeStage wrote, with its mark.
type stagedDeployment struct {
	OSTreeDeployment
	mark string
}

// ostreeStagedDeployments are the deployments of ds (nil: read the status) that
// ostreeStage wrote and are still staged (not finalized). The mark stays in the origin
// of the deployment once finalized and booted: only the staged one counts.
func (h *Host) ostreeStagedDeployments(ctx context.Context, ds []OSTreeDeployment) ([]stagedDeployment, error) {
	if ds == nil {
		var err error
		if ds, err = h.ostreeStatus(ctx); err != nil {
			return nil, err
		}
	}
	var out []stagedDeployment
	for _, d := range ds {
		if !d.Staged {
			continue
		}
		m, err := h.ostreeMark(ctx, d)
		if err != nil {
			return nil, err
		}
		if m != "" {
			out = append(out, stagedDeployment{d, m})
		}
	}
	return out, nil
}

// ostreeStaged is the deployment ostreeStage wrote for image, nil when there is none (it
// was never staged, or it was lost: undeployed by another tool, or its write cut short).
func (h *Host) ostreeStaged(ctx context.Context, image string) (*stagedDeployment, error) {
	ds, err := h.ostreeStagedDeployments(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, d := range ds {
		if d.Refspec == image {
			return &d, nil
		}
	}
	return nil, nil
}

// ostreeStagedFor is a deployment ostreeStage wrote for pivot, the image this update's
// pivot moves to, with the kernel arguments of the next boot changed by add and remove;
// nil when none is (or no pivot follows: pivot "").
func (h *Host) ostreeStagedFor(ctx context.Context, add, remove []string, pivot string) (*OSTreeDeployment, error) {
	if pivot == "" {
		return nil, nil
	}
	ds, err := h.ostreeStatus(ctx)
	if err != nil {
		return nil, err
	}
	staged, err := h.ostreeStagedDeployments(ctx, ds)
	if err != nil || len(staged) == 0 {
		return nil, err
	}
	kargs, err := NextBootKernelArgs(filepath.Join(h.Chroot, "/boot/loader/entries"))
	if err != nil {
		return nil, err
	}
	mark := stagedMark(nodeexec.WithArgs(kargs, add, remove))
	for _, d := range staged {
		if d.Refspec == pivot && d.mark == mark {
			return &d.OSTreeDeployment, nil
		}
	}
	return nil, nil
}

// ostreeStage is Stage on a plain OSTree host: the image pulled when it names a remote,
// then deployed staged (`ostree admin deploy --stage`: checked out now, its boot entry
// written when it is finalized) with the kernel arguments the slot's steps will ask for,
// marked in its origin, behind libostree's finalization lock so that no shutdown before
// the slot finalizes it. The switch in the slot finalizes it (ostreeFinalize): seconds,
// where a deploy checks the tree out again. A deployment staged earlier for anything
// else is replaced (ostreeWrite).
func (h *Host) ostreeStage(ctx context.Context, image string, add, remove []string) error {
	img := OSTreeImage{}
	if image != "" {
		var err error
		if img, err = ParseOSTreeImage(image); err != nil {
			return fmt.Errorf("stage: %w", err)
		}
	}
	if img.Remote != "" {
		if err := h.run(ctx, []string{"ostree", "pull", img.Remote, img.Rev}); err != nil {
			return fmt.Errorf("stage %s: %w", image, err)
		}
	}
	keep := h.ostree
	defer func() { h.ostree = keep }() // what the slot's steps asked in this process stays
	h.ostree = ostreeState{image: image, add: slices.Clone(add), remove: slices.Clone(remove)}
	if err := h.ostreeWrite(ctx, true); err != nil {
		return fmt.Errorf("stage %s: %w", orRev(image, "the booted image"), err)
	}
	return nil
}

// finalizationLock is libostree's lock on a staged deployment (ostree 2022.7 and later
// honour it: "Not finalizing; found /run/ostree/staged-deployment-locked"): while it
// exists, a shutdown does not finalize the staged deployment, which is lost with /run.
const finalizationLock = "/run/ostree/staged-deployment-locked"

// lockFinalization creates the finalization lock in the host's root.
func (h *Host) lockFinalization() error {
	p := filepath.Join(h.Chroot, finalizationLock)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("locking the staged deployment's finalization: %w", err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		return fmt.Errorf("locking the staged deployment's finalization: %w", err)
	}
	return nil
}

// ostreeFinalize makes the staged deployment d the next boot's: the finalization lock
// removed, then finalized now (`ostree admin finalize-staged`, what libostree's unit runs
// at shutdown: /etc merged, the boot entry written) rather than at the reboot's
// shutdown, so that, as after a deploy, the boot entry is on disk when the step returns
// and a power cut before the reboot still boots the update.
func (h *Host) ostreeFinalize(ctx context.Context, d *stagedDeployment) error {
	if err := os.Remove(filepath.Join(h.Chroot, finalizationLock)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("unlocking the staged deployment's finalization: %w", err)
	}
	if err := h.run(ctx, []string{"ostree", "admin", "finalize-staged"}); err != nil {
		return err
	}
	ds, err := h.ostreeStatus(ctx)
	if err != nil {
		return err
	}
	if len(ds) == 0 || ds[0].Booted || ds[0].Staged || ds[0].Checksum != d.Checksum {
		return fmt.Errorf("ostree admin finalize-staged left %+v first, want %s pending", ds, d.Checksum)
	}
	return nil
}

func (h *Host) ostreeStatus(ctx context.Context) ([]OSTreeDeployment, error) {
	out, err := h.output(ctx, h.Commands.Status)
	if err != nil {
		return nil, err
	}
	return ParseOSTreeStatus(out)
}

// NextBootKernelArgs are the kernel arguments of the boot entry with the highest version in
// dir (/boot/loader/entries, the Boot Loader Specification's entries that ostree writes):
// the deployment that boots next, without the ostree= argument ostree adds to each.
func NextBootKernelArgs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the boot entries: %w", err)
	}
	best, bestVersion := "", -1
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".conf") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading the boot entries: %w", err)
		}
		fields := blsFields(string(b))
		if v, err := strconv.Atoi(fields["version"]); err == nil && v > bestVersion {
			best, bestVersion = fields["options"], v
		}
	}
	if bestVersion < 0 {
		return nil, fmt.Errorf("reading the boot entries: no entry with a version in %s", dir)
	}
	return slices.DeleteFunc(nodeexec.ParseCmdline(best), func(a string) bool { return strings.HasPrefix(a, "ostree=") }), nil
}

// blsFields reads a Boot Loader Specification entry: "key value" lines.
func blsFields(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		if k != "" && !strings.HasPrefix(k, "#") {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
