package macaddr

import "testing"

func TestNormal(t *testing.T) {
	for in, want := range map[string]string{"52:54:00:AB:CD:EF": "52:54:00:ab:cd:ef", "52-54-00-ab-cd-ef": "52:54:00:ab:cd:ef",
		"": "", "52:54:00": "", "00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01": "", "zz-54-00-ab-cd-ef": ""} {
		if got, ok := Normal(in); got != want || ok != (want != "") {
			t.Errorf("Normal(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
