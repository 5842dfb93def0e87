// Package butane translates the Butane text (or an Ignition config) of a config into what
// mcp manages — files, directories, links, systemd units, kernel arguments and the core
// user's SSH keys — and the rest, which booting nodes get as it is (users and groups,
// disks, filesystems, RAID, LUKS, configs to merge…: first boot only, never dropped). The
// translation is Butane's own (github.com/coreos/ignition/v2/butane, which is where Butane
// lives since Ignition v2.27.0), so the variants and versions accepted are the library's.
// The Ignition config it produces is read with Ignition's parser through the ignition
// room's table of specs. It reads files only from the files directory its caller gives
// (TranslateFiles): Butane's local file references are refused without one.
package butane

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/coreos/ignition/v2/butane/config"
	"github.com/coreos/ignition/v2/butane/config/common"
	"github.com/coreos/ignition/v2/config/v3_6/types"
	"github.com/coreos/vcontext/report"
	"go.yaml.in/yaml/v3"

	"github.com/mcpfleet/mcp/ignition"
	"github.com/mcpfleet/mcp/model"
)

// Result is what a Butane text declares, in the model's terms. Files and units have
// their Butane field set to their place in the translated Ignition config; DeclRange is
// left for the caller (the butane attribute's range).
type Result struct {
	Files       []model.File
	Directories []model.Directory
	Links       []model.Link
	Units       []model.Unit
	KernelArgs  []string
	// KernelArgPaths are the places of KernelArgs in the translated config.
	KernelArgPaths []string
	// SSHKeys are the core user's SSH authorized keys (passwd.users, SSHKeysAt), which
	// mcp manages as the MCO does: model.SSHKeyItems.
	SSHKeys   []string
	SSHKeysAt string
	// FirstBoot is the rest of the config, for booting nodes only (model.Config.FirstBoot):
	// nil when there is none; FirstBootParts names its parts. FirstBootPaths are the files,
	// directories and links left in it because of their paths ("/home/a/.bashrc
	// (storage.files.2)").
	FirstBoot      []byte
	FirstBootParts []string
	FirstBootPaths []string
	// FirstBootFiles are the files left in the first-boot part because mcp cannot know
	// their bytes when it plans (split.go's unknownBytes), each with its path, place and
	// why: "/etc/x (storage.files.0): contents from https://…".
	FirstBootFiles []string
	// Spec is the Ignition spec the Butane variant and version translate to.
	Spec string
}

// Problem is one error or warning about the Butane text. Message names Butane's own line
// and column in the text when Butane gives one.
type Problem struct {
	Warning bool
	Message string
}

// variants names the Butane variants the library knows, for the message on an unknown
// one (its registry is not exported). TestVariantsAreTheLibrarys keeps it true.
var variants = []string{"fcos", "flatcar", "openshift", "r4e", "fiot"}

// MaxSize bounds a Butane text. Butane's translation and validation take time and memory
// that grow faster than the number of entries (20,000 files: 20 s), so a text larger than
// any real node's configuration is refused at once; large files are better given as file
// blocks anyway.
const MaxSize = 1 << 20

// Translate translates text. Problems are in Butane's order; the Result is nil when any is
// an error.
//
// Files, directories and links at a path firstBootOnly takes (nil: none) are left in the
// first-boot part, as Ignition writes them, and named in Result.FirstBootPaths.
func Translate(text []byte, firstBootOnly func(path string) bool) (*Result, []Problem) {
	return TranslateFiles(text, "", firstBootOnly)
}

// TranslateFiles is Translate with Butane's files directory (its --files-dir): local,
// ssh_authorized_keys_local, contents_local and trees read from filesDir. The caller
// confines what filesDir holds; "" is none.
func TranslateFiles(text []byte, filesDir string, firstBootOnly func(path string) bool) (*Result, []Problem) {
	return guarded(text, func() (*Result, []Problem) { return translate(text, filesDir, firstBootOnly) })
}

// ToMachineConfig translates text, a Butane config of variant openshift, to the YAML of
// the MachineConfig Butane writes for it (butane without --raw, which keeps the openshift
// section: kernel arguments, FIPS, kernel type, extensions). Local files are read from
// filesDir as TranslateFiles reads them. The YAML is nil when a problem is an error.
func ToMachineConfig(text []byte, filesDir string) ([]byte, []Problem) {
	return guarded(text, func() ([]byte, []Problem) { return translateBytes(text, filesDir, false) })
}

// OpenShift reports whether text is a Butane config of variant openshift: a
// MachineConfig written in Butane, which ToMachineConfig translates.
func OpenShift(text []byte) bool {
	var v struct {
		Variant string `yaml:"variant"`
	}
	return len(text) <= MaxSize && yaml.Unmarshal(text, &v) == nil && v.Variant == "openshift"
}

// guarded runs f, a translation of text, when text is not too large. The translator is
// a large library fed text from a configuration: whatever it does with an input nobody
// foresaw, mcp reports an error rather than dying. (The fuzz target calls translate
// itself, so that such a panic is still found.)
func guarded[T any](text []byte, f func() (T, []Problem)) (out T, problems []Problem) {
	var zero T
	if len(text) > MaxSize {
		return zero, []Problem{tooLarge("Butane text", len(text))}
	}
	defer func() {
		if v := recover(); v != nil {
			out, problems = zero, []Problem{{Message: fmt.Sprintf("the Butane translator failed on this text: %v", v)}}
		}
	}()
	return f()
}

// tooLarge refuses a text (what) of n bytes, more than MaxSize.
func tooLarge(what string, n int) Problem {
	return Problem{Message: fmt.Sprintf("the %s is %d bytes, more than mcp takes (%d): split it across configs, or give large files as file blocks", what, n, MaxSize)}
}

func translate(text []byte, filesDir string, firstBootOnly func(string) bool) (*Result, []Problem) {
	ign, problems := translateBytes(text, filesDir, true)
	if ign == nil {
		return nil, problems
	}
	cfg, irpt, err := ignition.ParseAny(ign)
	if err != nil {
		for _, p := range fromReport(irpt) {
			p.Message = "in the Ignition config Butane translated it to: " + p.Message
			problems = append(problems, p)
		}
		return nil, append(problems, Problem{Message: fmt.Sprintf("the Butane translates to an Ignition config mcp cannot read: %v", err)})
	}
	return split(&cfg, problems, firstBootOnly)
}

// translateBytes is Butane's translation of text: the Ignition config (raw), or what Butane
// writes by default (a variant openshift text's MachineConfig YAML); nil when a problem
// is an error.
func translateBytes(text []byte, filesDir string, raw bool) ([]byte, []Problem) {
	out, rpt, err := config.TranslateBytes(text, common.TranslateBytesOptions{Raw: raw,
		// Inline contents stay plain text, as mcp compares and writes them.
		TranslateOptions: common.TranslateOptions{NoResourceAutoCompression: true, FilesDir: filesDir}})
	problems := fromReport(rpt)
	if err != nil {
		if !rpt.IsFatal() {
			problems = append(problems, Problem{Message: explain(err)})
		}
		return nil, problems
	}
	return out, problems
}

// FromIgnition reads an Ignition config (any spec mcp knows) as Translate reads what a
// Butane text translates to: a config's ignition attribute.
func FromIgnition(text []byte, firstBootOnly func(path string) bool) (*Result, []Problem) {
	if len(text) > MaxSize {
		return nil, []Problem{tooLarge("Ignition config", len(text))}
	}
	cfg, rpt, err := ignition.ParseAny(text)
	problems := fromReport(rpt)
	if err != nil {
		if !rpt.IsFatal() {
			problems = append(problems, Problem{Message: err.Error()})
		}
		return nil, problems
	}
	return split(&cfg, problems, firstBootOnly)
}

// split is cfg's managed parts and its first-boot rest, or the errors that stop it.
func split(cfg *types.Config, problems []Problem, firstBootOnly func(string) bool) (*Result, []Problem) {
	if firstBootOnly == nil {
		firstBootOnly = func(string) bool { return false }
	}
	res, errs := fromIgnition(cfg, firstBootOnly)
	for _, e := range errs {
		problems = append(problems, Problem{Message: e})
	}
	if len(errs) > 0 {
		return nil, problems
	}
	return res, problems
}

// explain is Butane's error, with what to do when it is about the variant or version.
func explain(err error) string {
	var unknown common.ErrUnknownVersion
	switch {
	case errors.As(err, &unknown):
		return fmt.Sprintf("Butane has no variant %q with version %s: variants are %s, each with its own versions (https://coreos.github.io/butane/specs/)",
			unknown.Variant, unknown.Version, strings.Join(variants, ", "))
	case errors.Is(err, common.ErrNoVariant):
		return `the Butane text names no variant: it starts with, for example, "variant: fcos" and "version: 1.6.0"`
	case errors.Is(err, common.ErrInvalidVersion):
		return `the Butane text's version is not a semantic version such as "1.6.0"`
	}
	var ue common.ErrUnmarshal
	if errors.As(err, &ue) {
		return "the Butane text is not valid YAML: " + ue.Detail
	}
	return err.Error()
}

// fromReport turns Butane's (or Ignition's) report entries into problems, with the line
// and column of the text they point at.
func fromReport(r report.Report) []Problem {
	var out []Problem
	for _, e := range r.Entries {
		if e.Kind != report.Error && e.Kind != report.Warn {
			continue
		}
		var at []string
		if e.Marker.StartP != nil {
			line, col := e.Marker.Start()
			at = append(at, fmt.Sprintf("line %d, column %d", line, col))
		}
		if e.Context.Len() > 0 {
			at = append(at, strings.TrimPrefix(e.Context.String(), "$."))
		}
		msg := e.Message
		if msg == common.ErrNoFilesDir.Error() {
			// Butane's CLI flag means nothing here.
			msg = "mcp reads local files named in Butane from the directory of the Butane file (butane = file(\"x.bu\")) or butane_files_dir: give one, or the contents inline"
		}
		if len(at) > 0 {
			msg = strings.Join(at, ", ") + ": " + msg
		}
		out = append(out, Problem{Warning: e.Kind == report.Warn, Message: msg})
	}
	return out
}

// MaxInflated bounds what the compressed inline contents of one text decompress to,
// together: more than any node's configuration holds, so that a decompression bomb (a
// few KiB of gzip that inflate to GiBs) is refused before it fills memory.
const MaxInflated = 32 << 20

// file is f as mcp manages it, or why it cannot be. Compressed contents are decompressed
// as Ignition and the MCO's daemon do, within *inflate bytes, which it takes from.
func file(f *types.File, at string, inflate *int) (model.TreeEntry, string) {
	e, why := entry(f.Node, at)
	mf := &model.File{Entry: e, Mode: 0o644}
	if f.Mode != nil {
		mf.Mode = *f.Mode
	}
	if why != "" {
		return mf, why
	}
	// Sources that are not data URLs and append are first boot only (unknownBytes), so
	// what reaches here is inline.
	c := f.Contents
	if c.Source == nil {
		return mf, ""
	}
	data, err := ignition.Inline(c, *inflate)
	var big *ignition.TooLargeError
	if errors.As(err, &big) {
		return mf, fmt.Sprintf("its %s-compressed contents decompress to more than mcp takes (%d MiB, with the other compressed contents of the text): "+
			"a decompression bomb, or a file too large for a node's configuration", *c.Compression, MaxInflated>>20)
	}
	if err != nil {
		return mf, fmt.Sprintf("contents: %v", err)
	}
	if c.Compression != nil && *c.Compression != "" {
		*inflate -= len(data)
	}
	mf.Contents = data
	return mf, ""
}

// setFields names the fields of v (a struct) that are not zero, by their JSON paths.
func setFields(v reflect.Value, prefix string) []string {
	var out []string
	t := v.Type()
	for i := range t.NumField() {
		fv := v.Field(i)
		if fv.IsZero() {
			continue
		}
		name := strings.Split(t.Field(i).Tag.Get("json"), ",")[0]
		if t.Field(i).Anonymous || name == "" {
			name = ""
		} else if prefix != "" {
			name = prefix + "." + name
		}
		if fv.Kind() == reflect.Struct {
			if sub := setFields(fv, cmpOr(name, prefix)); len(sub) > 0 {
				out = append(out, sub...)
				continue
			}
		}
		out = append(out, cmpOr(name, prefix))
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
