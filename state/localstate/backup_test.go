package localstate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpfleet/mcp/state"
)

// TestLocalWriteKeepsBackup: each write keeps the state it replaces as <path>.backup, as
// Terraform keeps terraform.tfstate.backup; a damaged state is never made the backup.
func TestLocalWriteKeepsBackup(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	backup := b.Path + ".backup"
	s := state.New()
	s.Serial = 1
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(backup); !os.IsNotExist(err) {
		t.Errorf("a backup after the first write: %v", err)
	}
	s.Serial = 2
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	prev, err := (&Local{Path: backup}).readHead()
	if err != nil || prev.Serial != 1 || prev.Lineage != s.Lineage {
		t.Fatalf("backup after the second write: %+v, %v; want serial 1", prev, err)
	}
	// A damaged state is not copied over the good backup.
	if err := os.WriteFile(b.Path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s.Serial = 3
	if err := b.Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	if prev, err := (&Local{Path: backup}).readHead(); err != nil || prev.Serial != 1 {
		t.Errorf("backup after replacing a damaged state: %+v, %v; want serial 1 kept", prev, err)
	}
}

// TestLocalReadErrorSaysHowToRestore: a state that cannot be read is an error naming it,
// and, when there is a backup, the command that restores it.
func TestLocalReadErrorSaysHowToRestore(t *testing.T) {
	ctx := context.Background()
	b := &Local{Path: filepath.Join(t.TempDir(), "mcp.state")}
	os.WriteFile(b.Path, []byte("null"), 0o644)
	_, err := b.Read(ctx)
	if err == nil || !strings.Contains(err.Error(), b.Path) || strings.Contains(err.Error(), "cp ") {
		t.Fatalf("damaged state without a backup: %v", err)
	}
	s := state.New()
	for serial := range int64(2) {
		s.Serial = serial + 1
		if err := b.Write(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(b.Path, []byte(`{"version":1,"lin`), 0o644)
	_, err = b.Read(ctx)
	want := "cp " + b.Path + ".backup " + b.Path
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "cut off") {
		t.Fatalf("damaged state with a backup: %v, want it to say what is wrong and %q", err, want)
	}
}
