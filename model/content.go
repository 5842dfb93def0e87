package model

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// File is a managed regular file. It appears both in a Config (with its source range) and,
// merged, in a Rendered config.
type File struct {
	Entry
	Mode     int    `json:"mode"` // permission bits, e.g. 0o644
	Contents []byte `json:"contents"`
	// Sensitive hides the file's content from what mcp shows (plan, show, drift, their JSON
	// and Markdown), as Terraform's sensitive does: its diff, its text and its digest. The
	// node still gets it, and saved plans and the state hold it, as Terraform's do.
	Sensitive bool `json:"sensitive,omitempty"`
}

// Unit is a managed systemd unit with its drop-ins.
type Unit struct {
	Name      string   `json:"name"`
	Enabled   *bool    `json:"enabled,omitempty"`
	Mask      bool     `json:"mask,omitempty"`
	Contents  string   `json:"contents,omitempty"`
	Dropins   []Dropin `json:"dropins,omitempty"`
	OnChange  []Policy `json:"on_change,omitempty"`
	DeclRange Range    `json:"-"`
	Text      TextRef  `json:"-"` // as File.Text
}

// Dropin is a systemd drop-in of a unit.
type Dropin struct {
	Name     string `json:"name"`
	Contents string `json:"contents"`
}

// PolicyKind says what a change to a file or unit needs to take effect.
type PolicyKind string

const (
	PolicyNone         PolicyKind = "none"
	PolicyReload       PolicyKind = "reload"        // reload:UNIT
	PolicyRestart      PolicyKind = "restart"       // restart:UNIT
	PolicyDaemonReload PolicyKind = "daemon-reload" // systemctl daemon-reload
	PolicyDrain        PolicyKind = "drain"         // cordon and drain, write, uncordon; no reboot
	PolicyReboot       PolicyKind = "reboot"
)

// Policy is one on_change entry.
type Policy struct {
	Kind PolicyKind `json:"kind"`
	Unit string     `json:"unit,omitempty"` // for reload and restart
}

func (p Policy) String() string {
	if p.Unit != "" {
		return string(p.Kind) + ":" + p.Unit
	}
	return string(p.Kind)
}

// ParsePolicy parses "none", "daemon-reload", "drain", "reboot", "reload:U" or "restart:U".
func ParsePolicy(s string) (Policy, error) {
	kind, unit, hasUnit := strings.Cut(s, ":")
	switch PolicyKind(kind) {
	case PolicyNone, PolicyDaemonReload, PolicyDrain, PolicyReboot:
		if hasUnit {
			return Policy{}, fmt.Errorf("policy %q takes no unit", kind)
		}
		return Policy{Kind: PolicyKind(kind)}, nil
	case PolicyReload, PolicyRestart:
		if !hasUnit || unit == "" {
			return Policy{}, fmt.Errorf("policy %q needs a unit, as in %q", kind, kind+":chronyd.service")
		}
		if !ValidUnitName(unit) {
			return Policy{}, fmt.Errorf("policy %q: %q is not a unit name (no slash, space or control character, at most %d bytes)", kind, unit, maxUnitName)
		}
		return Policy{Kind: PolicyKind(kind), Unit: unit}, nil
	}
	return Policy{}, fmt.Errorf("unknown policy %q: want none, reload:UNIT, restart:UNIT, daemon-reload, drain or reboot", s)
}

// maxUnitName is systemd's bound on a unit's name.
const maxUnitName = 255

// ValidUnitName reports whether s is what systemd could take as a unit's name: no slash,
// space or control character, at most 255 bytes, and not a dot-directory. The
// configuration, the agent protocol and the node agent all hold names to it.
func ValidUnitName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > maxUnitName {
		return false
	}
	for _, r := range s {
		if r == '/' || r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// Directory is a managed directory: made when missing, held to its mode and owner. What
// it holds is not managed (a file inside it is managed only by a file of its own).
type Directory struct {
	Entry
	Mode int `json:"mode"` // permission bits with setuid, setgid and sticky, e.g. 0o755
	// Overwrite is Ignition's, as a Butane or Ignition config gives it: at first boot,
	// what is at the path is deleted first. The node executor removes a file or link in
	// the way, never a directory that is there (nor what it holds).
	Overwrite bool `json:"overwrite,omitempty"`
}

// Link is a managed link. A symbolic link's Target is data: written into the link as it
// is and never followed to write. A hard link's Target is an absolute path on the node,
// which must exist; the link is that file under a second name.
type Link struct {
	Entry
	Target string `json:"target"`
	Hard   bool   `json:"hard,omitempty"`
}

// SSHKeysDir is where the core user's SSH authorized keys are managed, as the MCO and
// Fedora CoreOS keep them (sshd reads every file of the directory through
// ssh-key-dir): one file per source, "ignition" being the one Ignition's passwd stage
// and the MCO write.
const SSHKeysDir = "/home/core/.ssh/authorized_keys.d"

// SSHKeysFile is the file the core user's keys (a config's ssh_authorized_keys block, or
// passwd.users in its Butane or Ignition) go to: the MCO's path, and Ignition's.
const SSHKeysFile = SSHKeysDir + "/ignition"

// SSHTree is the one tree outside /etc and /var that mcp writes, and only what it
// declares itself (the key files and their directories): the core user's ~/.ssh.
const SSHTree = "/home/core/.ssh"

// SSHKeys is the managed content of the core user's keys: each key on a line of its own,
// as the MCO writes them.
func SSHKeys(keys []string) []byte {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// SSHKeyItems are the file (mode 0600) and the directories (0700), all the core user's,
// that the keys become: what the MCO makes, so that sshd's StrictModes takes them. A
// change of keys needs nothing beyond the write (on_change none), as the MCO's default
// SSH key policy.
func SSHKeyItems(keys []string, at Range, text TextRef) (File, []Directory) {
	none := []Policy{{Kind: PolicyNone}}
	f := File{
		Entry:    Entry{Path: SSHKeysFile, User: "core", Group: "core", OnChange: none, DeclRange: at, Text: text},
		Mode:     0o600,
		Contents: SSHKeys(keys),
	}
	var dirs []Directory
	for _, d := range []string{SSHTree, SSHKeysDir} {
		dirs = append(dirs, Directory{Entry: Entry{Path: d, User: "core", Group: "core", OnChange: none, DeclRange: at, Text: text}, Mode: 0o700})
	}
	return f, dirs
}
