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
	image       string // the image a pivot asked for; "" for the booted one
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
func (h *Host) ostreeKargs(ctx context.Context, add, remove []string) error {
	h.ostree.add, h.ostree.remove = slices.Clone(add), slices.Clone(remove)
	if err := h.ostreeDeploy(ctx); err != nil {
		return fmt.Errorf("kernel arguments: %w", err)
	}
	return nil
}

// ostreePivot pulls the image when it names a remote and deploys it.
func (h *Host) ostreePivot(ctx context.Context, image string) error {
	img, err := ParseOSTreeImage(image)
	if err != nil {
		return fmt.Errorf("pivot: %w", err)
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
func (h *Host) ostreeDeploy(ctx context.Context) error {
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
	if image == "" {
		image = booted.Refspec
	} else {
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
	if next := ds[0]; next.Checksum == rev && (next.Refspec == image || image == "") && slices.Equal(want, kargs) {
		return nil // the next boot is already as asked: a resumed step deploys nothing
	}
	argv := []string{"ostree", "admin", "deploy", "--os=" + booted.Stateroot, "--karg-none"}
	for _, k := range want {
		argv = append(argv, "--karg-append="+nodeexec.FormatCmdline([]string{k})) // a blank in it stays in one argument
	}
	if image != "" && image != rev {
		origin, err := h.originFile(image)
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
func (h *Host) originFile(image string) (string, error) {
	f, err := os.CreateTemp(filepath.Join(h.Chroot, "/tmp"), "mcp-origin-*")
	if err != nil {
		return "", fmt.Errorf("writing the deployment's origin: %w", err)
	}
	_, err = fmt.Fprintf(f, "[origin]\nrefspec=%s\n", image)
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
		if len(ds) == 0 || ds[0].Booted || !ds[0].Pending {
			return nil
		}
		if err := h.run(ctx, []string{"ostree", "admin", "undeploy", "0"}); err != nil {
			return fmt.Errorf("unstage: %w", err)
		}
	}
	return errors.New("unstage: deployments still pending after undeploying four")
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
