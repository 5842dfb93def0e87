package model

import "encoding/json"

// Files, directories and links encode as they did before they shared Entry: each kind's
// keys in their old order. A rendered config is named by a hash of its JSON
// (ignition/content.Name), so another order would rename every rendered config and
// re-roll every fleet; states, saved plans and the boot server's answers keep their bytes
// too. Decoding needs nothing of its own: Entry's keys are File's, Directory's and Link's.

type fileJSON struct {
	Path      string   `json:"path"`
	Mode      int      `json:"mode"`
	User      string   `json:"user,omitempty"`
	Group     string   `json:"group,omitempty"`
	Contents  []byte   `json:"contents"`
	OnChange  []Policy `json:"on_change,omitempty"`
	Sensitive bool     `json:"sensitive,omitempty"`
}

type directoryJSON struct {
	Path      string   `json:"path"`
	Mode      int      `json:"mode"`
	User      string   `json:"user,omitempty"`
	Group     string   `json:"group,omitempty"`
	OnChange  []Policy `json:"on_change,omitempty"`
	Overwrite bool     `json:"overwrite,omitempty"`
}

type linkJSON struct {
	Path     string   `json:"path"`
	Target   string   `json:"target"`
	Hard     bool     `json:"hard,omitempty"`
	User     string   `json:"user,omitempty"`
	Group    string   `json:"group,omitempty"`
	OnChange []Policy `json:"on_change,omitempty"`
}

func (f File) MarshalJSON() ([]byte, error) {
	return json.Marshal(fileJSON{f.Path, f.Mode, f.User, f.Group, f.Contents, f.OnChange, f.Sensitive})
}

func (d Directory) MarshalJSON() ([]byte, error) {
	return json.Marshal(directoryJSON{d.Path, d.Mode, d.User, d.Group, d.OnChange, d.Overwrite})
}

func (l Link) MarshalJSON() ([]byte, error) {
	return json.Marshal(linkJSON{l.Path, l.Target, l.Hard, l.User, l.Group, l.OnChange})
}
