package ignition

import (
	"fmt"
	"testing"
)

// TestTable: newest first, one entry per minor, each version its minor's, and each parser
// takes a config of its own version and no other.
func TestTable(t *testing.T) {
	all := All()
	for i, s := range all {
		if s.Version != fmt.Sprintf("3.%d.0", s.Minor) || (i > 0 && s.Minor != all[i-1].Minor-1) {
			t.Errorf("entry %d: %s, minor %d", i, s.Version, s.Minor)
		}
		for _, o := range all {
			_, err := s.Parse([]byte(`{"ignition":{"version":"` + o.Version + `"}}`))
			if (err == nil) != (o.Version == s.Version) {
				t.Errorf("the %s parser on a %s config: %v", s.Version, o.Version, err)
			}
		}
	}
	if Newest().Minor != all[0].Minor {
		t.Errorf("newest %s", Newest().Version)
	}
	if got := RenderList(); got != "3.4.0, 3.5.0 or 3.6.0" {
		t.Errorf("RenderList() = %q", got)
	}
	if s, ok := Lookup("3.5.0"); !ok || s.Minor != 5 || !s.Render {
		t.Errorf("Lookup(3.5.0) = %+v, %v", s, ok)
	}
	if _, ok := Lookup("3.5"); ok {
		t.Error("Lookup took a version without its patch number")
	}
}
