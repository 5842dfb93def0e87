package ignition

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/vincent-petithory/dataurl"

	"github.com/mcpfleet/mcp/model"
)

// Config is a config read back (Read): what Ignition's files stage and kargs stage do with
// it at a machine's first boot, in order — directories, files, links, units — with Ignition's
// defaults filled in. Writing it to a root is the reader's (the local fleet's first boot).
type Config struct {
	Directories []Directory
	Files       []File
	Links       []Link
	Units       []Unit
	// KernelArgs are the kernel arguments the kargs stage leaves on a machine that had
	// none: shouldExist in order, each once, without those in shouldNotExist.
	KernelArgs []string
}

// Owner is who a node's file belongs to: each of user and group by id, else by name in
// the node's own etc/passwd and etc/group; neither given, the file is left as created.
// (It converts to nodeexec.Owner, the executor's.)
type Owner struct {
	UID, GID    *int
	User, Group string
}

// Node is what a directory, file and link have alike, as in Ignition's types.Node.
type Node struct {
	Path      string
	Overwrite bool // what is in the way at Path is removed (else it is an error, or kept)
	Owner     Owner
}

func nodeOf(n types.Node) Node {
	return Node{Path: n.Path, Overwrite: boolOf(n.Overwrite), Owner: ownerOf(n.User, n.Group)}
}

// Directory is a directory Ignition makes.
type Directory struct {
	Node
	Mode fs.FileMode // Ignition's default, 0755, when the config gives none
}

// File is a file Ignition writes: Contents (nil: none given, so a file that exists keeps
// its bytes) followed by each of Append.
type File struct {
	Node
	Contents *Resource
	Append   []Resource
	Mode     fs.FileMode // Ignition's default, 0644, when the config gives none
}

// Link is a link Ignition makes.
type Link struct {
	Node
	Target string
	Hard   bool
}

// Entry is a *Directory, a *File or a *Link: a filesystem entry of Ignition's files stage.
type Entry interface {
	Common() *Node
	Kind() string // "directory", "file", "link", as errors name it
}

func (*Directory) Kind() string { return "directory" }
func (*File) Kind() string      { return "file" }
func (*Link) Kind() string      { return "link" }

// Common is the part n's kind shares with the others.
func (n *Node) Common() *Node { return n }

// Entries are c's directories, files and links, in the order Ignition makes them.
func (c *Config) Entries() []Entry {
	var out []Entry
	for i := range c.Directories {
		out = append(out, &c.Directories[i])
	}
	for i := range c.Files {
		out = append(out, &c.Files[i])
	}
	for i := range c.Links {
		out = append(out, &c.Links[i])
	}
	return out
}

// Unit is a systemd unit of the config: its file and drop-ins written when they have
// contents, masked (a link to /dev/null), enabled or disabled (nil: neither) through
// systemd's presets as Ignition does.
type Unit struct {
	Name     string
	Contents *string
	Dropins  []model.Dropin // those with contents
	Mask     bool
	Enabled  *bool
}

// Resource is the inline data of a file's contents or of an append.
type Resource struct {
	source, compression, hash string
}

// UnsupportedError refuses a part of a config that Read does not give back: configs to
// fetch from elsewhere, users and groups, disks — what a machine without network or disks
// could not do, and what mcp's served configs never have. What names it.
type UnsupportedError struct{ What string }

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("the config has %s, which mcp does not read back", e.What)
}

// NotInlineError refuses a resource that is not inline data (data: URL): one to fetch
// from elsewhere, by the scheme of its source.
type NotInlineError struct{ Scheme string }

func (e *NotInlineError) Error() string {
	return fmt.Sprintf("source %s:…: mcp reads inline data: sources only", e.Scheme)
}

// Read reads a config back — the boot server's served config of a pool, in any 3.x spec,
// parsed by Ignition's own parser as Ignition does at boot — as what its files stage and
// kargs stage do. A config Ignition's parser refuses is an error with the parser's report;
// one with parts Read does not give back is an *UnsupportedError. Resources are decoded
// when asked (Resource.Data), so a reader meets their errors where Ignition would.
func Read(raw []byte) (*Config, error) {
	cfg, rpt, err := ParseAny(raw)
	if err != nil {
		if s := strings.TrimSpace(rpt.String()); s != "" {
			err = fmt.Errorf("%w: %s", err, s)
		}
		return nil, err
	}
	if err := unsupported(&cfg); err != nil {
		return nil, err
	}
	out := &Config{}
	for _, d := range cfg.Storage.Directories {
		out.Directories = append(out.Directories, Directory{Node: nodeOf(d.Node), Mode: modeOr(d.Mode, 0o755)})
	}
	for _, f := range cfg.Storage.Files {
		rf := File{Node: nodeOf(f.Node), Mode: modeOr(f.Mode, 0o644)}
		if f.Contents.Source != nil {
			res := resourceOf(f.Contents)
			rf.Contents = &res
		}
		for _, a := range f.Append {
			rf.Append = append(rf.Append, resourceOf(a))
		}
		out.Files = append(out.Files, rf)
	}
	for _, l := range cfg.Storage.Links {
		if l.Target == nil {
			return nil, fmt.Errorf("link %s: no target", l.Path)
		}
		out.Links = append(out.Links, Link{Node: nodeOf(l.Node), Target: *l.Target, Hard: boolOf(l.Hard)})
	}
	for _, u := range cfg.Systemd.Units {
		ru := Unit{Name: u.Name, Contents: u.Contents, Mask: boolOf(u.Mask), Enabled: u.Enabled}
		for _, d := range u.Dropins {
			if d.Contents != nil {
				ru.Dropins = append(ru.Dropins, model.Dropin{Name: d.Name, Contents: *d.Contents})
			}
		}
		out.Units = append(out.Units, ru)
	}
	for _, a := range cfg.KernelArguments.ShouldExist {
		if !slices.Contains(out.KernelArgs, string(a)) {
			out.KernelArgs = append(out.KernelArgs, string(a))
		}
	}
	for _, a := range cfg.KernelArguments.ShouldNotExist {
		out.KernelArgs = slices.DeleteFunc(out.KernelArgs, func(x string) bool { return x == string(a) })
	}
	return out, nil
}

// unsupported names the first part of cfg Read does not give back.
func unsupported(cfg *types.Config) error {
	var what string
	switch {
	case len(cfg.Ignition.Config.Merge) > 0 || cfg.Ignition.Config.Replace.Source != nil:
		what = "ignition.config (configs fetched from elsewhere)"
	case len(cfg.Passwd.Users) > 0 || len(cfg.Passwd.Groups) > 0:
		what = "passwd (users and groups)"
	case len(cfg.Storage.Disks) > 0 || len(cfg.Storage.Raid) > 0 || len(cfg.Storage.Filesystems) > 0 || len(cfg.Storage.Luks) > 0:
		what = "storage disks, raid, filesystems or luks"
	default:
		return nil
	}
	return &UnsupportedError{What: what}
}

func resourceOf(r types.Resource) Resource {
	var res Resource
	if r.Source != nil {
		res.source = *r.Source
	}
	if r.Compression != nil {
		res.compression = *r.Compression
	}
	if r.Verification.Hash != nil {
		res.hash = *r.Verification.Hash
	}
	return res
}

// Data is the resource's bytes: its data URL decoded, decompressed (gzip, to at most
// model.MaxRenderedSize), and checked against its verification hash.
func (r Resource) Data() ([]byte, error) { return r.DataLimit(model.MaxRenderedSize) }

// Inline is what Ignition writes for r, the contents of a file whose source is a data URL
// (as Data, decompressing to at most limit bytes): what the MCO's daemon writes for it too
// (its DecodeIgnitionFileContents: the data URL decoded, then gzip-decompressed).
func Inline(r types.Resource, limit int) ([]byte, error) { return resourceOf(r).DataLimit(limit) }

// DataLimit is Data, decompressing to at most limit bytes: more is an error (a
// decompression bomb, or a file larger than mcp takes).
func (r Resource) DataLimit(limit int) ([]byte, error) {
	if r.source == "" {
		return nil, nil
	}
	if !strings.HasPrefix(r.source, "data:") {
		scheme, _, _ := strings.Cut(r.source, ":")
		return nil, &NotInlineError{Scheme: scheme}
	}
	d, err := dataurl.DecodeString(r.source)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	data := d.Data
	if r.compression != "" {
		if r.compression != "gzip" {
			return nil, fmt.Errorf("compression %q: Ignition knows gzip only", r.compression)
		}
		z, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, gzipError(err)
		}
		if data, err = io.ReadAll(io.LimitReader(z, int64(limit)+1)); err != nil {
			return nil, gzipError(err)
		}
		if len(data) > limit {
			// As internal/boundedfile.ReadLimit words it (internal/ is on the room's floor, not below).
			return nil, &TooLargeError{Limit: limit}
		}
	}
	if r.hash != "" {
		if err := verify(r.hash, data); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// gzipError is err of the gzip reader, said to be gzip's once.
func gzipError(err error) error {
	if strings.HasPrefix(err.Error(), "gzip: ") {
		return err
	}
	return fmt.Errorf("gzip: %w", err)
}

// TooLargeError is compressed contents that decompress to more than Limit bytes.
type TooLargeError struct{ Limit int }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("gzip: the decompressed data is larger than %s, more than mcp reads", size(e.Limit))
}

// size is n bytes for people: in MiB when it is a whole number of them.
func size(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// verify checks data (decompressed, as Ignition's verification.hash describes it) against
// "sha512-HEX" or "sha256-HEX".
func verify(want string, data []byte) error {
	kind, sum, _ := strings.Cut(want, "-")
	var h hash.Hash
	switch kind {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return fmt.Errorf("verification hash %q: want sha512-… or sha256-…", want)
	}
	h.Write(data)
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(sum) {
		return fmt.Errorf("verification: the contents hash to %s-%s, not %s", kind, got, want)
	}
	return nil
}

func ownerOf(u types.NodeUser, g types.NodeGroup) Owner {
	o := Owner{UID: u.ID, GID: g.ID}
	if u.Name != nil {
		o.User = *u.Name
	}
	if g.Name != nil {
		o.Group = *g.Name
	}
	return o
}

func modeOr(m *int, def fs.FileMode) fs.FileMode {
	if m == nil {
		return def
	}
	return model.FileMode(*m)
}

func boolOf(b *bool) bool { return b != nil && *b }
