package content

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/mcpfleet/mcp/model"
)

// The Ignition config of a rendered config, as the JSON it is: only the fields mcp sets,
// and no empty section (an empty section is noise to a reader and an "unused key" to an
// older spec's parser). It is marshalled once. Rendered configs are named by a hash of these
// bytes, so they must stay what they were when render marshalled Ignition's own types,
// decoded that into maps, dropped the empty parts and marshalled it again: every struct
// lists its fields in the order of their JSON keys (encoding/json sorts map keys), which
// TestIgnitionFieldsInKeyOrder checks.
type (
	ignConfig struct {
		Ignition        ignSection  `json:"ignition"`
		KernelArguments *ignKargs   `json:"kernelArguments,omitempty"`
		Storage         *ignStorage `json:"storage,omitempty"`
		Systemd         *ignSystemd `json:"systemd,omitempty"`
	}
	ignSection struct {
		Version string `json:"version"`
	}
	ignKargs struct {
		ShouldExist []string `json:"shouldExist"`
	}
	ignStorage struct {
		Directories []ignDirectory `json:"directories,omitempty"`
		Files       []ignFile      `json:"files,omitempty"`
		Links       []ignLink      `json:"links,omitempty"`
	}
	// A directory's overwrite is written only when its config asked for it: Ignition's
	// deletes one that exists, with what it holds; without it, Ignition sets an existing
	// directory's mode and owner.
	ignDirectory struct {
		Group     *ignName `json:"group,omitempty"`
		Mode      int      `json:"mode"`
		Overwrite bool     `json:"overwrite,omitempty"`
		Path      string   `json:"path"`
		User      *ignName `json:"user,omitempty"`
	}
	// A link overwrites what is at its path, as the node executor replaces it.
	ignLink struct {
		Group     *ignName `json:"group,omitempty"`
		Hard      bool     `json:"hard,omitempty"`
		Overwrite bool     `json:"overwrite"`
		Path      string   `json:"path"`
		Target    string   `json:"target"`
		User      *ignName `json:"user,omitempty"`
	}
	ignFile struct {
		Contents  ignSource `json:"contents"`
		Group     *ignName  `json:"group,omitempty"`
		Mode      int       `json:"mode"`
		Overwrite bool      `json:"overwrite"`
		Path      string    `json:"path"`
		User      *ignName  `json:"user,omitempty"`
	}
	ignSource struct {
		Source string `json:"source"`
	}
	ignName struct {
		Name string `json:"name"`
	}
	ignSystemd struct {
		Units []ignUnit `json:"units"`
	}
	ignUnit struct {
		Contents string      `json:"contents,omitempty"`
		Dropins  []ignDropin `json:"dropins,omitempty"`
		Enabled  *bool       `json:"enabled,omitempty"`
		Mask     bool        `json:"mask,omitempty"`
		Name     string      `json:"name"`
	}
	ignDropin struct {
		Contents string `json:"contents"`
		Name     string `json:"name"`
	}
)

// storage is the storage section of es, each entry an Ignition node (path, owner) with
// what its kind has beside.
func storage(es []model.TreeEntry) *ignStorage {
	s := &ignStorage{}
	for _, e := range es {
		n := e.Common()
		path, user, group := text(n.Path), name(n.User), name(n.Group)
		switch e := e.(type) {
		case *model.File:
			s.Files = append(s.Files, ignFile{Contents: ignSource{DataURL(e.Contents)}, Mode: e.Mode, Overwrite: true,
				Path: path, Group: group, User: user})
		case *model.Directory:
			s.Directories = append(s.Directories, ignDirectory{Mode: e.Mode, Overwrite: e.Overwrite, Path: path, Group: group, User: user})
		case *model.Link:
			s.Links = append(s.Links, ignLink{Hard: e.Hard, Overwrite: true, Path: path, Target: text(e.Target), Group: group, User: user})
		}
	}
	return s
}

// encode writes the Ignition config of r's content. It cannot fail: the value holds only
// strings, numbers and booleans.
func encode(r *model.Rendered) []byte {
	c := ignConfig{Ignition: ignSection{Version: text(r.IgnitionVersion)}}
	// A node booting with this config gets its kernel arguments from Ignition's kargs stage
	// (spec 3.3+), so it comes up with them instead of needing a second reboot.
	if len(r.KernelArgs) > 0 {
		c.KernelArguments = &ignKargs{ShouldExist: make([]string, len(r.KernelArgs))}
		for i, k := range r.KernelArgs {
			c.KernelArguments.ShouldExist[i] = text(k)
		}
	}
	if es := r.Entries(); len(es) > 0 {
		c.Storage = storage(es)
	}
	if len(r.Units) > 0 {
		c.Systemd = &ignSystemd{Units: make([]ignUnit, len(r.Units))}
		for i, u := range r.Units {
			unit := ignUnit{Name: text(u.Name), Contents: text(u.Contents), Enabled: u.Enabled, Mask: u.Mask}
			for _, d := range u.Dropins {
				unit.Dropins = append(unit.Dropins, ignDropin{Name: text(d.Name), Contents: text(d.Contents)})
			}
			c.Systemd.Units[i] = unit
		}
	}
	b, err := json.Marshal(&c)
	if err != nil {
		panic("encoding an Ignition config: " + err.Error())
	}
	if len(r.FirstBoot) == 0 {
		return b
	}
	return withFirstBoot(b, r.FirstBoot)
}

// name is a file's user or group by name; none when it is not set.
func name(s string) *ignName {
	if s == "" {
		return nil
	}
	return &ignName{text(s)}
}

// text is s with each byte that is not UTF-8 replaced by U+FFFD, as the old marshal, decode
// and marshal again left it (the encoder writes such a byte as the escape \ufffd, which
// decodes to the character itself).
func text(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.WriteString(s[i : i+size])
		}
		i += size
	}
	return sb.String()
}

// DataURL encodes contents as an RFC 2397 data URL, as render writes a file's contents:
// percent-encoded when it is UTF-8 text, base64 otherwise. Every byte sequence encodes to
// a URL that Ignition's data-URL parser decodes back to exactly those bytes.
func DataURL(b []byte) string {
	if utf8.Valid(b) {
		var sb strings.Builder
		sb.Grow(len("data:,") + len(b))
		sb.WriteString("data:,")
		for _, c := range b {
			if raw[c] {
				sb.WriteByte(c)
			} else {
				sb.WriteByte('%')
				sb.WriteByte(upperHex[c>>4])
				sb.WriteByte(upperHex[c&15])
			}
		}
		return sb.String()
	}
	return "data:;base64," + base64.StdEncoding.EncodeToString(b)
}

const upperHex = "0123456789ABCDEF"

// raw are the bytes a data URL carries as themselves. Ignition decodes data URLs with
// github.com/vincent-petithory/dataurl, whose lexer takes as data only printable ASCII
// (0x21-0x7E) other than " # < > [ \ ] ^ ` { | } — space, every control byte, DEL and
// every byte of 0x80 and above are "invalid data character" — and whose unescaping reads
// % as the start of an escape. ? is escaped too (a URL parser reads a query from it), as
// it always was. Before [, ] and DEL were escaped, content holding them failed Ignition's
// validation at render, so no config that rendered encodes differently now.
var raw = func() (t [256]bool) {
	for c := 0x21; c <= 0x7E; c++ {
		t[c] = !strings.ContainsRune(`"#<>[\]^`+"`{|}%?", rune(c))
	}
	return t
}()
