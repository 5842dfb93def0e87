package unitinstall

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLinks(t *testing.T) {
	tests := []struct {
		name        string
		unit        string
		files       []string
		links       []string
		installable bool
	}{
		{"no install section", "a.service", []string{"[Service]\nExecStart=/bin/a\n"}, nil, false},
		{"empty install section", "a.service", []string{"[Service]\n[Install]\n"}, nil, false},
		{"wanted, required, upheld, alias", "a.service",
			[]string{"[Install]\nWantedBy=multi-user.target  graphical.target\nRequiredBy=b.service\nUpheldBy=c.target\nAlias=aa.service\n"},
			[]string{"multi-user.target.wants/a.service", "graphical.target.wants/a.service", "b.service.requires/a.service",
				"c.target.upholds/a.service", "aa.service"}, true},
		{"a drop-in adds, and an empty assignment resets", "a.service",
			[]string{"[Install]\nWantedBy=multi-user.target\n", "[Install]\nWantedBy=\nWantedBy=sockets.target\n", "[Install]\nRequiredBy=x.target\n"},
			[]string{"sockets.target.wants/a.service", "x.target.requires/a.service"}, true},
		{"Also alone links nothing but can be enabled", "a.service", []string{"[Install]\nAlso=a.socket\n"}, nil, true},
		{"instance of a template", "getty@tty2.service",
			[]string{"[Install]\nWantedBy=getty.target\nAlias=term@.service\n"},
			[]string{"getty.target.wants/getty@tty2.service", "term@tty2.service"}, true},
		{"template with a default instance", "getty@.service",
			[]string{"[Install]\nWantedBy=getty.target\nDefaultInstance=tty1\n"}, []string{"getty.target.wants/getty@tty1.service"}, true},
		{"template without one", "getty@.service", []string{"[Install]\nWantedBy=getty.target\n"}, nil, false},
		{"specifiers, and names that are no unit names", "a@x.service",
			[]string{"[Install]\nWantedBy=%p-%i.target ../../etc.target\nAlias=%N-alias.service\n"},
			[]string{"a-x.target.wants/a@x.service", "a@x-alias.service"}, true},
		{"repeats once", "a.service", []string{"[Install]\nWantedBy=m.target\nWantedBy=m.target\n"}, []string{"m.target.wants/a.service"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, err := Parse(tt.files...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.links, i.Links(tt.unit)); d != "" {
				t.Errorf("links (-want +got):\n%s", d)
			}
			if got := i.Installable(tt.unit); got != tt.installable {
				t.Errorf("installable = %v, want %v", got, tt.installable)
			}
		})
	}
}

func TestParseError(t *testing.T) {
	if _, err := Parse("[Install\nWantedBy=x\n"); err == nil {
		t.Error("a broken section header parsed")
	}
}

func TestNames(t *testing.T) {
	for _, c := range [][4]string{
		{"a.service", "", "", "a.service"},
		{"a@x.service", "x", "a@.service", "a@x.service"},
		{"a@.service", "", "", "a@d.service"},
	} {
		if Instance(c[0]) != c[1] || Template(c[0]) != c[2] || LinkName(c[0], "d") != c[3] {
			t.Errorf("%s: instance %q template %q link %q", c[0], Instance(c[0]), Template(c[0]), LinkName(c[0], "d"))
		}
	}
}
