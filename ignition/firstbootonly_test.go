package ignition

import (
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_6/types"
)

// TestFirstBootPartLeavesOutWhatIsNotSet: every element of a list is pruned of what its
// config does not set — the second LUKS volume as the first: a "cex": {} left on it is a
// key no spec before 3.5.0 takes, and a config of two LUKS volumes was refused at the
// default ignition_version.
func TestFirstBootPartLeavesOutWhatIsNotSet(t *testing.T) {
	dev := func(s string) *string { return &s }
	yes := true
	c := &types.Config{Storage: types.Storage{Luks: []types.Luks{
		{Name: "a", Device: dev("/dev/disk/by-partlabel/a"), Clevis: types.Clevis{Tpm2: &yes}},
		{Name: "b", Device: dev("/dev/disk/by-partlabel/b"), Clevis: types.Clevis{Tpm2: &yes}},
	}}}
	b, err := EncodeFirstBoot(c)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "cex") || strings.Count(s, `"tpm2":true`) != 2 {
		t.Errorf("first-boot part %s: want both volumes, without what is not set", s)
	}
}
