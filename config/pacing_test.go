package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpfleet/mcp/model"
)

func TestPacingAndWindows(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "local" { fleet = "f" }
pool "worker" {
  max_failures = 2
  soak         = "5m"
  max_staging  = 0
  canary {
    count = 2
    soak  = "10m"
  }
  window {
    days      = ["sun", "SAT"]
    start     = "02:30"
    duration  = "4h"
    time_zone = "Europe/Berlin"
  }
  window {
    start    = "23:00"
    duration = "90m"
  }
}
pool "infra" {
  canary {}
}
`)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	infra, worker := res.Desired.Pools[0], res.Desired.Pools[1]
	zero := 0
	if d := cmp.Diff(model.Pacing{Canary: 2, CanarySoak: 10 * time.Minute, MaxFailures: 2, Soak: 5 * time.Minute, MaxStaging: &zero}, worker.Pacing); d != "" {
		t.Errorf("worker pacing (-want +got):\n%s", d)
	}
	if d := cmp.Diff(model.Pacing{Canary: 1, MaxFailures: 1}, infra.Pacing); d != "" {
		t.Errorf("infra pacing, defaults (-want +got):\n%s", d)
	}
	if len(worker.Windows) != 2 {
		t.Fatalf("windows %+v, want 2", worker.Windows)
	}
	var got []string
	for _, w := range worker.Windows {
		got = append(got, w.String())
		if w.DeclRange.Start.Line == 0 {
			t.Errorf("window without a source range: %+v", w)
		}
	}
	want := []string{"sat,sun 02:30 for 4h (Europe/Berlin)", "daily 23:00 for 1h30m (UTC)"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("windows (-want +got):\n%s", d)
	}
	if worker.Windows[0].Location.String() != "Europe/Berlin" || worker.Windows[1].Location != time.UTC {
		t.Errorf("locations %v, %v", worker.Windows[0].Location, worker.Windows[1].Location)
	}
	if len(infra.Windows) != 0 {
		t.Errorf("infra has windows: %+v", infra.Windows)
	}
}

func TestPacingErrorsHavePlaces(t *testing.T) {
	tests := []struct {
		name, src string
		summary   string
		line, col int
	}{
		{"canary count 0", "pool \"p\" {\n  canary { count = 0 }\n}", "Invalid count", 2, 20},
		{"canary count fraction", "pool \"p\" {\n  canary { count = 1.5 }\n}", "Invalid count", 2, 20},
		{"canary soak", "pool \"p\" {\n  canary { soak = \"10\" }\n}", "Invalid soak", 2, 19},
		{"negative canary soak", "pool \"p\" {\n  canary { soak = \"-1m\" }\n}", "Invalid soak", 2, 19},
		{"two canaries", "pool \"p\" {\n  canary {}\n  canary {}\n}", "Duplicate canary block", 3, 3},
		{"max_failures 0", "pool \"p\" { max_failures = 0 }", "Invalid max_failures", 1, 27},
		{"max_failures string", "pool \"p\" { max_failures = \"two\" }", "Invalid max_failures", 1, 27},
		{"max_staging negative", "pool \"p\" { max_staging = -1 }", "Invalid max_staging", 1, 26},
		{"max_staging fraction", "pool \"p\" { max_staging = 0.5 }", "Invalid max_staging", 1, 26},
		{"max_staging percentage", "pool \"p\" { max_staging = \"10%\" }", "Invalid max_staging", 1, 26},
		{"soak zero", "pool \"p\" { soak = \"0s\" }", "Invalid soak", 1, 19},
		{"bad day", "pool \"p\" {\n  window {\n    days     = [\"sat\", \"sunday\"]\n    start    = \"02:00\"\n    duration = \"1h\"\n  }\n}", "Invalid day", 3, 24},
		{"no days", "pool \"p\" {\n  window {\n    days     = []\n    start    = \"02:00\"\n    duration = \"1h\"\n  }\n}", "No days", 3, 16},
		{"bad start", "pool \"p\" {\n  window {\n    start    = \"2am\"\n    duration = \"1h\"\n  }\n}", "Invalid start", 3, 16},
		{"start 24:00", "pool \"p\" {\n  window {\n    start    = \"24:00\"\n    duration = \"1h\"\n  }\n}", "Invalid start", 3, 16},
		{"start without leading zero", "pool \"p\" {\n  window {\n    start    = \"2:00\"\n    duration = \"1h\"\n  }\n}", "Invalid start", 3, 16},
		{"bad duration", "pool \"p\" {\n  window {\n    start    = \"02:00\"\n    duration = \"4 hours\"\n  }\n}", "Invalid duration", 4, 16},
		{"duration over a week", "pool \"p\" {\n  window {\n    start    = \"02:00\"\n    duration = \"169h\"\n  }\n}", "Invalid duration", 4, 16},
		{"bad zone", "pool \"p\" {\n  window {\n    start     = \"02:00\"\n    duration  = \"1h\"\n    time_zone = \"Mars/Olympus\"\n  }\n}", "Invalid time_zone", 5, 17},
		{"Local zone", "pool \"p\" {\n  window {\n    start     = \"02:00\"\n    duration  = \"1h\"\n    time_zone = \"Local\"\n  }\n}", "Invalid time_zone", 5, 17},
		{"missing start", "pool \"p\" {\n  window { duration = \"1h\" }\n}", "Missing required argument", 2, 12},
		{"unknown canary attribute", "pool \"p\" {\n  canary { soak_time = \"1m\" }\n}", "Unsupported argument", 2, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diagAt(t, localProvider, tt.src, tt.summary, tt.line, tt.col)
		})
	}
}
