// Package machineconfig reads the MachineConfig objects of the OpenShift Machine Config
// Operator (MCO) — YAML as kept in git or printed by `oc get machineconfig -o yaml`: one
// object, several documents, or a List — into what mcp manages, with the MCO's semantics:
// spec.config is an Ignition config of spec 3.x, or 2.2 translated as the MCO translates
// it; spec.kernelArguments entries are split into arguments as the MCO's daemon splits
// them; spec.osImageURL is the OS image; the label machineconfiguration.openshift.io/role
// names the pool. What the MCO can do and mcp cannot (another kernel, extensions, FIPS)
// is refused with the field's line and column, never dropped. It does no I/O.
package machineconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpfleet/mcp/config/butane"
	"github.com/mcpfleet/mcp/model"
)

// RoleLabel is the label whose value names the pool a MachineConfig is for.
const RoleLabel = "machineconfiguration.openshift.io/role"

// APIVersion is the MachineConfig API mcp reads.
const APIVersion = "machineconfiguration.openshift.io/v1"

// generatedBy marks the MachineConfigs the MCO's controllers make from their templates;
// the MCO takes no osImageURL from them.
const generatedBy = "machineconfiguration.openshift.io/generated-by-controller-version"

// MachineConfig is one MachineConfig object, in mcp's terms.
type MachineConfig struct {
	Name string
	// Role is the value of the role label; "" when the object has none.
	Role string
	// OSImage is spec.osImageURL ("" when unset, or when the MCO would ignore it).
	OSImage string
	// KernelArgs are spec.kernelArguments, each entry split into arguments as the MCO does
	// ("a=1 b" is two arguments); KernelArgAt is the place of the entry each came from.
	KernelArgs  []string
	KernelArgAt []Pos
	// Ignition is what spec.config declares (nil when it declares nothing); Spec its
	// Ignition spec version as written ("2.2.0", "3.2.0").
	Ignition *butane.Result
	Spec     string
	// Generated is true for a MachineConfig the MCO's controllers made (the annotation
	// machineconfiguration.openshift.io/generated-by-controller-version): 00-<pool>,
	// 01-<pool>-kubelet, 99-<pool>-generated-registries… (WithoutGenerated).
	Generated bool
	// At is the place of the object in the text.
	At Pos
}

// Pos is a line and column (1-based) in the YAML text; zero when unknown.
type Pos struct{ Line, Column int }

func (p Pos) String() string { return fmt.Sprintf("line %d, column %d", p.Line, p.Column) }

// Problem is one error or warning about the text, at the field it is about.
type Problem struct {
	At      Pos
	Warning bool
	Message string
}

func (p Problem) String() string {
	if p.At.Line == 0 {
		return p.Message
	}
	return p.At.String() + ": " + p.Message
}

// MaxItems bounds the items of a List: a cluster has tens of MachineConfigs, and each
// item read costs memory whatever its size.
const MaxItems = 5000

// MaxSize bounds the text read: as Butane's bound, larger than any real pool's
// configuration, and small enough that reading it costs little.
const MaxSize = 8 << 20

// Parse reads every MachineConfig of text. The MachineConfigs are returned only when no
// problem is an error.
func Parse(text []byte) ([]MachineConfig, []Problem) { return ParseWith(text, Checks{}) }

// Checks are what the reader holds a MachineConfig's spec.config to beyond Ignition's own
// rules: the configuration language's (config.MachineConfigChecks), so that what it reads
// is what a config block may declare, and each refusal is at its line in the YAML.
type Checks struct {
	// FirstBootOnly takes the paths whose files, directories and links are left in
	// spec.config's first-boot part, as a Butane or Ignition config's are (nil: none).
	FirstBootOnly func(path string) bool
	// Refuse says what of the managed part of spec.config no config may declare (nil:
	// nothing).
	Refuse func(*butane.Result) []Refusal
}

// Refusal is one item of spec.config that Checks.Refuse refuses: its place in the
// Ignition config ("storage.files.0"), a summary and a message naming it.
type Refusal struct {
	Field, Summary, Message string
}

// ParseWith is Parse with checks.
func ParseWith(text []byte, checks Checks) ([]MachineConfig, []Problem) {
	return parse(text, &parser{checks: checks})
}

func parse(text []byte, p *parser) ([]MachineConfig, []Problem) {
	if len(text) > MaxSize {
		return nil, []Problem{{Message: fmt.Sprintf("the text is %d bytes, more than mcp reads (%d)", len(text), MaxSize)}}
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p.errorf(Pos{}, "not valid YAML: %v", strings.TrimPrefix(err.Error(), "yaml: "))
			break
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue // an empty document, as between two "---"
		}
		if p.duplicateKeys(&doc) {
			continue
		}
		if p.butane != nil {
			p.places = butanePlaces(doc.Content[0], p.butane)
		}
		p.object(doc.Content[0])
	}
	if len(p.mcs) == 0 && !p.failed() {
		p.errorf(Pos{}, "the text holds no MachineConfig")
	}
	if p.failed() {
		return nil, p.problems
	}
	return p.mcs, p.problems
}

type parser struct {
	mcs      []MachineConfig
	problems []Problem
	checks   Checks
	// butane is the text of a Butane config (variant openshift) the YAML was translated
	// from (FromButane), nil for a MachineConfig's own YAML; places then maps places in the
	// YAML to places in it.
	butane *yaml.Node
	places map[Pos]Pos
}

// add records pr, at its place in the text the user wrote.
func (p *parser) add(pr Problem) {
	pr.At = p.place(pr.At)
	p.problems = append(p.problems, pr)
}

func (p *parser) errorf(at Pos, format string, args ...any) {
	p.add(Problem{At: at, Message: fmt.Sprintf(format, args...)})
}

// place is at in the text the user wrote: at itself in a MachineConfig's YAML; in a
// Butane text, the place of the field at came from (zero when none: spec.config).
func (p *parser) place(at Pos) Pos {
	if p.butane == nil {
		return at
	}
	return p.places[at]
}

// field names a field of the MachineConfig's spec as the user wrote it: "spec.fips", or
// in a Butane text "openshift.fips".
func (p *parser) field(name string) string {
	if f, ok := butaneFields[name]; ok && p.butane != nil {
		return f
	}
	return "spec." + name
}

func (p *parser) failed() bool {
	for _, pr := range p.problems {
		if !pr.Warning {
			return true
		}
	}
	return false
}

// object reads a MachineConfig, or each item of a List of them.
func (p *parser) object(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		p.errorf(at(n), "expected a MachineConfig object (a mapping with kind: MachineConfig)")
		return
	}
	kindNode := get(n, "kind")
	kind := scalar(kindNode)
	switch kind {
	case "MachineConfig":
		p.machineConfig(n)
	case "List", "MachineConfigList":
		p.list(n, kind)
	case "Template":
		p.errorf(at(kindNode), "an OpenShift Template, not a MachineConfig: process it first (oc process -f FILE -p NAME=… --local -o yaml)")
	default:
		p.errorf(at(orNode(kindNode, n)), "kind %s: mcp reads MachineConfig objects (kind: MachineConfig, or a List of them)", orNone(kind))
	}
}

// list reads each item of a List as `oc get machineconfig -o yaml` prints it. A
// problem with an item names it by index and name; the MCO's rendered configs are left
// out (renderedBy).
func (p *parser) list(n *yaml.Node, kind string) {
	items := get(n, "items")
	if items == nil || items.Kind != yaml.SequenceNode {
		if items == nil || items.Tag != "!!null" {
			p.errorf(at(n), "a %s needs items: a list of MachineConfigs", kind)
		}
		return
	}
	if len(items.Content) > MaxItems {
		p.errorf(at(items), "the %s has %d items, more than mcp imports (%d): a pool has tens; "+
			"select the pool's (oc get machineconfig -l %s=POOL -o yaml)", kind, len(items.Content), MaxItems, RoleLabel)
		return
	}
	for i, it := range items.Content {
		// An item is named as "MachineConfig NAME (items[3])", or by its index alone.
		name := scalar(get(get(it, "metadata"), "name"))
		item := fmt.Sprintf("items[%d] of the %s", i, kind)
		if name != "" {
			item = fmt.Sprintf("MachineConfig %s (items[%d])", name, i)
		}
		switch {
		case it.Kind == yaml.ScalarNode && it.Tag == "!!null":
			p.errorf(at(it), "%s is empty (null): a %s holds MachineConfigs", item, kind)
			continue
		case it.Kind != yaml.MappingNode:
			p.errorf(at(it), "%s is %s, not a MachineConfig object", item, yamlKind(it))
			continue
		case scalar(get(it, "kind")) != "MachineConfig":
			p.errorf(at(it), "%s is a %s, not a MachineConfig", item, orNone(scalar(get(it, "kind"))))
			continue
		}
		before := len(p.problems)
		p.object(it)
		for j := before; j < len(p.problems); j++ {
			m := p.problems[j].Message
			if name != "" && strings.HasPrefix(m, "MachineConfig "+name) {
				m = strings.TrimPrefix(m, "MachineConfig "+name)
			} else {
				m = ": " + m
			}
			p.problems[j].Message = item + m
		}
	}
}

// renderedBy names the MachineConfigPool whose rendered config n is ("" when it is not
// one): the MCO's merge of the pool's MachineConfigs (rendered-<pool>-<hash>), owned by
// the pool. Its items are those of the MachineConfigs it merges, which are imported
// themselves; a node's currentConfig annotation names it.
func renderedBy(meta *yaml.Node) string {
	refs := get(meta, "ownerReferences")
	if refs == nil || refs.Kind != yaml.SequenceNode {
		return ""
	}
	for _, r := range refs.Content {
		if scalar(get(r, "kind")) == "MachineConfigPool" {
			return cmpOr(scalar(get(r, "name")), "(unnamed)")
		}
	}
	return ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// WithoutGenerated is mcs without the MachineConfigs the MCO's controllers generated
// (MachineConfig.Generated), and the names of those left out.
func WithoutGenerated(mcs []MachineConfig) (kept []MachineConfig, left []string) {
	for _, mc := range mcs {
		if mc.Generated {
			left = append(left, mc.Name)
			continue
		}
		kept = append(kept, mc)
	}
	return kept, left
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return fmt.Sprintf("%q", s)
}

var specFields = []string{"config", "kernelArguments", "osImageURL", "kernelType", "extensions", "fips", "baseOSExtensionsContainerImage"}

// machineConfig reads one MachineConfig object.
func (p *parser) machineConfig(n *yaml.Node) {
	if v := get(n, "apiVersion"); scalar(v) != APIVersion {
		p.errorf(at(orNode(v, n)), "apiVersion %s: mcp reads %s MachineConfigs", orNone(scalar(v)), APIVersion)
		return
	}
	mc := MachineConfig{At: p.place(at(n))}
	meta := get(n, "metadata")
	mc.Name = scalar(get(meta, "name"))
	if mc.Name == "" {
		p.errorf(at(orNode(meta, n)), "the MachineConfig has no metadata.name")
		return
	}
	if pool := renderedBy(meta); pool != "" {
		p.add(Problem{At: at(n), Warning: true, Message: fmt.Sprintf("MachineConfig %s: left out: it is the MCO's rendered config of pool %s "+
			"(owned by MachineConfigPool %s), the merge of the pool's MachineConfigs, which are imported themselves", mc.Name, pool, pool)})
		return
	}
	mc.Role = scalar(get(get(meta, "labels"), RoleLabel))
	generated := scalar(get(get(meta, "annotations"), generatedBy)) != ""
	mc.Generated = generated
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i].Value; k {
		case "apiVersion", "kind", "metadata", "spec", "status":
		default:
			p.errorf(at(n.Content[i]), "MachineConfig %s: unknown field %q (a MachineConfig has apiVersion, kind, metadata and spec)", mc.Name, k)
		}
	}
	spec := get(n, "spec")
	if spec == nil || spec.Tag == "!!null" {
		p.mcs = append(p.mcs, mc)
		return
	}
	if spec.Kind != yaml.MappingNode {
		p.errorf(at(spec), "MachineConfig %s: spec must be a mapping", mc.Name)
		return
	}
	before := len(p.problems)
	for i := 0; i+1 < len(spec.Content); i += 2 {
		k, v := spec.Content[i], spec.Content[i+1]
		p.specField(&mc, k, v, generated)
	}
	for i := before; i < len(p.problems); i++ {
		if !p.problems[i].Warning {
			return
		}
	}
	p.mcs = append(p.mcs, mc)
}

// specField reads one field of a MachineConfig's spec into mc.
func (p *parser) specField(mc *MachineConfig, k, v *yaml.Node, generated bool) {
	where := "MachineConfig " + mc.Name + ": " + p.field(k.Value)
	null := v.Tag == "!!null"
	switch k.Value {
	case "config":
		if !null {
			p.config(mc, v)
		}
	case "kernelArguments":
		if null {
			return
		}
		if v.Kind != yaml.SequenceNode {
			p.errorf(at(v), "%s must be a list of strings", where)
			return
		}
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode || e.Tag == "!!null" {
				p.errorf(at(e), "%s: each entry must be a string", where)
				continue
			}
			if why := model.KernelArgEntryProblem(e.Value); why != "" {
				p.errorf(at(e), "%s: entry %q %s", where, e.Value, why)
				continue
			}
			for _, a := range model.SplitKernelArgs(e.Value) {
				if slices.Contains(mc.KernelArgs, a) {
					p.add(Problem{At: at(e), Warning: true, Message: fmt.Sprintf(
						"%s: %s is given again: the MCO would append it twice, mcp's rendered config has it once", where, a)})
					continue
				}
				mc.KernelArgs = append(mc.KernelArgs, a)
				mc.KernelArgAt = append(mc.KernelArgAt, p.place(at(e)))
			}
		}
	case "osImageURL":
		switch {
		case null:
		case v.Kind != yaml.ScalarNode || v.Tag != "!!str":
			p.errorf(at(v), "%s must be a string (an image reference), not %s", where, yamlKind(v))
		case v.Value == "":
			// The MCO reads an empty osImageURL as none (its rendered configs carry one).
		case model.OSImageProblem(v.Value) != "":
			p.errorf(at(v), "%s %q %s", where, v.Value, model.OSImageProblem(v.Value))
		case !generated:
			mc.OSImage = v.Value
		}
	case "kernelType":
		switch scalar(v) {
		case "", "default":
		case "realtime", "64k-pages":
			p.errorf(at(v), "%s: %s: mcp does not install another kernel (the MCO replaces the kernel packages with rpm-ostree); "+
				"build an OS image with that kernel and give it as os_image (a MachineConfig's osImageURL), or leave this MachineConfig to the MCO", where, v.Value)
		default:
			p.errorf(at(v), "%s: %q is not a kernel type (the MCO knows default, realtime and 64k-pages)", where, v.Value)
		}
	case "extensions":
		if !null && (v.Kind != yaml.SequenceNode || len(v.Content) > 0) {
			p.errorf(at(v), "%s: mcp does not layer RHCOS extensions onto the OS; build an OS image with those packages "+
				"and give it as os_image (a MachineConfig's osImageURL), or leave this MachineConfig to the MCO", where)
		}
	case "fips":
		if scalar(v) == "true" {
			p.errorf(at(v), "%s: true: FIPS mode is chosen when a node is installed, and mcp does not install nodes; "+
				"a running node cannot be switched (the MCO refuses the change too)", where)
		} else if !null && scalar(v) != "false" {
			p.errorf(at(v), "%s must be true or false", where)
		}
	case "baseOSExtensionsContainerImage":
		if scalar(v) != "" {
			p.errorf(at(v), "%s: mcp does not layer RHCOS extensions onto the OS, so it takes no extensions image", where)
		}
	default:
		p.errorf(at(k), "MachineConfig %s: unknown field spec.%s (a MachineConfig's spec has %s)", mc.Name, k.Value, strings.Join(specFields, ", "))
	}
}

// config reads spec.config, an Ignition config written as YAML.
func (p *parser) config(mc *MachineConfig, n *yaml.Node) {
	where := "MachineConfig " + mc.Name + ": spec.config"
	var v any
	if err := n.Decode(&v); err != nil {
		p.errorf(at(n), "%s: %v", where, err)
		return
	}
	doc, ok := v.(map[string]any)
	if !ok {
		p.errorf(at(n), "%s must be an Ignition config (a mapping)", where)
		return
	}
	if len(doc) == 0 {
		return // config: {} declares nothing, as the MCO reads it
	}
	version, _ := dig(doc, "ignition", "version").(string)
	mc.Spec = version
	remap := func(path string) string { return path }
	if strings.HasPrefix(version, "2.") {
		var problems []problemAt
		doc, remap, problems = from22(doc)
		for _, pr := range problems {
			p.errorf(locate(n, pr.path), "%s: %s", where, pr.msg)
		}
		if doc == nil {
			return
		}
	}
	if ka := get(n, "kernelArguments"); ka != nil && ka.Tag != "!!null" {
		p.errorf(locate(n, "kernelArguments"), "%s.kernelArguments: the MCO refuses kernel arguments in the Ignition config "+
			"(\"ignition kargs section contains changes\"); give them as spec.kernelArguments", where)
		return
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		p.errorf(at(n), "%s: %v", where, err)
		return
	}
	res, problems := butane.FromIgnitionJSON(raw, p.checks.FirstBootOnly)
	for _, pr := range problems {
		p.add(Problem{At: locate(n, remap(jsonPath(pr.Message))), Warning: pr.Warning, Message: where + ": " + pr.Message})
	}
	if res != nil && p.checks.Refuse != nil {
		for _, r := range p.checks.Refuse(res) {
			p.errorf(locate(n, remap(r.Field)), "%s: %s", where, r.Message)
		}
	}
	if res != nil {
		p.placeItems(res, n, remap)
	}
	mc.Ignition = res
}

// duplicateKeys reports every key given twice in one mapping of n, at the second, and
// says whether there was one. YAML's keys are unique: a reader that kept the first (as a
// yaml.Node walk does) or the last (as Kubernetes' does) would silently drop the other's
// value — a second spec: and its osImageURL, a second kernelArguments.
func (p *parser) duplicateKeys(n *yaml.Node) bool {
	found := false
	if n.Kind == yaml.MappingNode {
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				continue
			}
			if first, ok := seen[k.Value]; ok {
				p.errorf(at(k), "key %q is given twice in one mapping (first at %s): give it once", k.Value, at(first))
				found = true
				continue
			}
			seen[k.Value] = k
		}
	}
	for _, c := range n.Content {
		found = p.duplicateKeys(c) || found
	}
	return found
}

// yamlKind names what n is for a message: "a number", "a list"….
func yamlKind(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Tag == "!!int" || n.Tag == "!!float":
		return "a number (" + n.Value + "; quote it to make it a string)"
	case n.Tag == "!!bool":
		return "true or false"
	}
	return n.Tag
}

// get is the value of key in mapping n, or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	_, v := entry(n, key)
	return v
}

// scalar is n's value when n is a non-null scalar, else "".
func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return ""
	}
	return n.Value
}

func at(n *yaml.Node) Pos { return Pos{n.Line, n.Column} }

func orNode(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}

// dig is the value at keys in nested maps, or nil.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
