package planfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func validFleet() *Fleet {
	a, b := validFile(), validFile()
	a.Cluster, b.Cluster, b.FleetFingerprint = "canary", "prod", "012345"
	return &Fleet{MCPVersion: "test", ConfigDir: "/cfg", Clusters: []Cluster{
		{Name: "canary", Stage: "canary", Plan: a},
		{Name: "prod", Stage: "prod", Plan: b},
		{Name: "eu", Stage: "prod", Unknown: "its fleet is unreachable"},
	}}
}

// A saved plan across clusters reads back with each cluster's plan and fingerprint; Read
// (one cluster's plan) refuses it by name, and ReadAny still reads a plan of one cluster.
func TestFleetReadsBack(t *testing.T) {
	p := filepath.Join(t.TempDir(), "plan")
	if err := WriteFleet(p, validFleet()); err != nil {
		t.Fatal(err)
	}
	one, fl, err := ReadAny(p)
	if err != nil || one != nil || len(fl.Clusters) != 3 {
		t.Fatalf("ReadAny: %v %v %+v", one, err, fl)
	}
	if fl.Clusters[1].Plan.FleetFingerprint != "012345" || fl.Clusters[2].Unknown == "" {
		t.Errorf("read back %+v", fl.Clusters)
	}
	if _, err := Read(p); !errors.Is(err, ErrFleet) {
		t.Errorf("Read of a fleet's plan: %v", err)
	}
	single, _ := writeRaw(t, validFile())
	if one, fl, err := ReadAny(single); err != nil || one == nil || fl != nil {
		t.Errorf("ReadAny of one cluster's plan: %v %v %v", one, fl, err)
	}
}

// A damaged fleet plan is refused, naming the cluster.
func TestFleetRefusesDamaged(t *testing.T) {
	for name, edit := range map[string]func(*Fleet){
		"twice":       func(f *Fleet) { f.Clusters[1].Name = "canary" },
		"other's":     func(f *Fleet) { f.Clusters[1].Plan.Cluster = "canary" },
		"both":        func(f *Fleet) { f.Clusters[0].Unknown = "x" },
		"bad plan":    func(f *Fleet) { f.Clusters[1].Plan.Serial = -1 },
		"no clusters": func(f *Fleet) { f.Clusters = []Cluster{} },
	} {
		f := validFleet()
		edit(f)
		p := filepath.Join(t.TempDir(), "plan")
		if err := WriteFleet(p, f); err != nil {
			t.Fatal(err)
		}
		_, _, err := ReadAny(p)
		if err == nil {
			b, _ := os.ReadFile(p)
			t.Errorf("%s: read %s", name, b)
		} else if name != "no clusters" && name != "both" && !strings.Contains(err.Error(), "cluster ") {
			t.Errorf("%s: %v does not name the cluster", name, err)
		}
	}
}
