package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/mcpfleet/mcp/config/butane"
	"github.com/mcpfleet/mcp/internal/boundedfile"
	"github.com/zclconf/go-cty/cty"
	"go.yaml.in/yaml/v3"
)

// Butane's files directory (its --files-dir): a Butane text's local, contents_local,
// ssh_authorized_keys_local and trees name files there. mcp copies what they name into a
// scratch directory through an os.Root of the files directory, so that nothing outside it
// is read (no "..", no symlink out) and the total is bounded as file() is, and gives
// Butane the copy.

// butaneFilesDir is the files directory of a config's butane attribute a:
// butane_files_dir when given, else the directory of the file a file("x.bu") or
// templatefile("x.bu", …) call reads; "" when neither.
func (l *loader) butaneFilesDir(attrs hcl.Attributes, a *hcl.Attribute) (string, hcl.Diagnostics) {
	if d := attrs["butane_files_dir"]; d != nil {
		s, diags := l.str(d)
		if diags.HasErrors() {
			return "", diags
		}
		return l.absPath(s), nil
	}
	call, ok := a.Expr.(*hclsyntax.FunctionCallExpr)
	if !ok || (call.Name != "file" && call.Name != "templatefile") || len(call.Args) == 0 {
		return "", nil
	}
	v, diags := call.Args[0].Value(l.ctx)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return "", nil
	}
	return filepath.Dir(l.absPath(v.AsString())), nil
}

// stageButaneFiles copies what text's local references name from dir into a new scratch
// directory and returns it ("" when text names no local file). The caller removes it.
func stageButaneFiles(text []byte, dir string) (string, error) {
	if len(text) > butane.MaxSize || dir == "" {
		return "", nil // Butane's own message
	}
	refs := localRefs(text)
	if len(refs) == 0 {
		return "", nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("the Butane files directory: %w", err)
	}
	defer root.Close()
	tmp, err := os.MkdirTemp("", "mcp-butane-files-")
	if err != nil {
		return "", err
	}
	s := &stager{root: root, to: tmp, budget: maxFileSize}
	for _, r := range refs {
		if err := s.ref(r); err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("local file %q of the Butane files directory %s: %w", r, dir, err)
		}
	}
	return tmp, nil
}

type stager struct {
	root   *os.Root
	to     string
	budget int64
}

// ref copies one reference: a file (through symlinks that stay inside the root), or a
// tree, whose symlinks are copied as links (Butane makes them links).
func (s *stager) ref(r string) error {
	p := path.Clean(filepath.ToSlash(r))
	if !fs.ValidPath(p) {
		return errors.New("not a relative path inside the directory")
	}
	st, err := s.root.Stat(p)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return s.file(p, st.Mode().Perm())
	}
	return fs.WalkDir(s.root.FS(), p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch t := d.Type(); {
		case t.IsDir():
			return os.MkdirAll(filepath.Join(s.to, q), 0o755)
		case t&fs.ModeSymlink != 0:
			target, err := s.root.Readlink(q)
			if err != nil {
				return err
			}
			return os.Symlink(target, filepath.Join(s.to, q))
		case t.IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return s.file(q, info.Mode().Perm())
		}
		return fmt.Errorf("%s is neither a file, a directory nor a symlink", q)
	})
}

// file copies the regular file p. It is opened as every file a user names is
// (boundedfile.OpenIn): without blocking, and refused unless it is a regular file — a
// FIFO named by contents.local would otherwise hang the open until a writer came.
func (s *stager) file(p string, perm fs.FileMode) error {
	f, _, err := boundedfile.OpenIn(s.root, p, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	dst := filepath.Join(s.to, p)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm|0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(f, s.budget+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	s.budget -= n
	if err == nil && s.budget < 0 {
		err = fmt.Errorf("the local files together are more than mcp reads (%d bytes)", maxFileSize)
	}
	return err
}

// localRefs are the paths a Butane text's local references name: every "local" key and
// every key ending in "_local" (a string or a list of strings), in order, once each. A
// text that is not YAML names none (Butane reports it).
func localRefs(text []byte) []string {
	var doc any
	if yaml.Unmarshal(text, &doc) != nil {
		return nil
	}
	var out []string
	add := func(v any) {
		if s, ok := v.(string); ok && s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, sub := range x {
				if k == "local" || strings.HasSuffix(k, "_local") {
					add(sub)
					if list, ok := sub.([]any); ok {
						for _, e := range list {
							add(e)
						}
					}
					continue
				}
				walk(sub)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	slices.Sort(out)
	return out
}
