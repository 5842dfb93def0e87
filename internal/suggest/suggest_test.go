package suggest

import "testing"

func TestDidYouMean(t *testing.T) {
	for _, c := range []struct {
		name  string
		names []string
		want  string
	}{
		{"wroker-1", []string{"worker-0", "worker-1", "infra-0"}, ` Did you mean "worker-1"?`},
		{"restrt", []string{"none", "reload", "restart", "daemon-reload", "drain", "reboot"}, ` Did you mean "restart"?`},
		{"-tagret", []string{"-target", "-exclude"}, ` Did you mean "-target"?`},
		{"gpu", []string{"worker", "infra"}, ""},
		{"worker", []string{"worker", "workers"}, ""}, // a name that is there needs no suggestion
	} {
		if got := DidYouMean(c.name, c.names); got != c.want {
			t.Errorf("DidYouMean(%q, %q) = %q, want %q", c.name, c.names, got, c.want)
		}
	}
}
