package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/mcpfleet/mcp/internal/hclpos"
	"github.com/mcpfleet/mcp/model"
)

var bootImageDefSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "os_image", Required: true}, {Name: "images"}}}

// bootImages reads the boot_image "NAME" blocks: an OS image and its images per platform.
// Two blocks of one OS image are refused: a managed pool picks its block by OS image.
func (l *loader) bootImages(blocks hcl.Blocks) hcl.Diagnostics {
	byOS := map[string]hcl.Range{}
	_, diags := eachBlock("boot_image", blocks, bootImageDefSchema, func(b *hcl.Block, content *hcl.BodyContent) (diags hcl.Diagnostics) {
		bi := model.BootImageDef{Name: b.Labels[0], DeclRange: hclpos.From(b.DefRange)}
		if a := content.Attributes["os_image"]; a != nil {
			v, d := l.str(a)
			diags = append(diags, d...)
			switch {
			case d.HasErrors():
			case v == "":
				diags = append(diags, errAt(a.Expr.Range(), "Empty os_image", fmt.Sprintf("boot_image %q needs the OS image it boots.", bi.Name)))
			default:
				if prev, ok := byOS[v]; ok {
					diags = append(diags, errAt(a.Expr.Range(), "Two boot images of one OS image",
						fmt.Sprintf("boot_image %q boots os_image %q, as the boot_image at %s does: a managed pool picks its boot image by OS image, so each OS image may have one.", bi.Name, v, posOf(prev))))
				}
				byOS[v] = a.Expr.Range()
			}
			bi.OSImage = v
		}
		if a := content.Attributes["images"]; a != nil {
			m, d := l.strMap(a)
			diags = append(diags, d...)
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if strings.TrimSpace(m[k]) == "" {
					diags = append(diags, errAt(a.Expr.Range(), "Empty boot image", fmt.Sprintf("boot_image %q: images[%q] is empty.", bi.Name, k)))
				}
			}
			bi.Images = m
		}
		l.d.BootImages = append(l.d.BootImages, bi)
		return diags
	})
	slices.SortFunc(l.d.BootImages, func(a, b model.BootImageDef) int { return strings.Compare(a.Name, b.Name) })
	return diags
}

var poolBootImageSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "policy"}, {Name: "image"}, {Name: "skew"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "machine_templates"}, {Type: "user_data"}},
}

// bootImage reads a pool's boot_image block. image is a reference, boot_image.NAME, to a
// block bootImages read (so a typo is an error here, not a node that boots nothing).
func (l *loader) bootImage(pool string, b *hcl.Block) (model.BootImage, hcl.Diagnostics) {
	bi := model.BootImage{Policy: model.BootImageManaged, Skew: model.SkewWarn, Declared: true, DeclRange: hclpos.From(b.DefRange)}
	content, diags := b.Body.Content(poolBootImageSchema)
	diags = append(diags, setEnum(l, content.Attributes, "policy", &bi.Policy, "Invalid boot image policy",
		"policy %q: use \"managed\" (the boot_image of the pool's OS image) or \"pinned\" (with image = boot_image.NAME).",
		model.BootImageManaged, model.BootImagePinned)...)
	diags = append(diags, setEnum(l, content.Attributes, "skew", &bi.Skew, "Invalid skew",
		"skew %q: use \"warn\" (show it) or \"enforce\" (refuse to apply while new nodes would boot another OS image than the pool's).",
		model.SkewWarn, model.SkewEnforce)...)
	image := content.Attributes["image"]
	if image != nil {
		name, d := l.bootImageRef(image)
		diags = append(diags, d...)
		bi.Image = name
	}
	switch {
	case bi.Policy == model.BootImagePinned && image == nil:
		diags = append(diags, errAt(b.DefRange, "Pinned boot image without an image",
			fmt.Sprintf("Pool %q: policy = \"pinned\" needs image = boot_image.NAME.", pool)))
	case bi.Policy == model.BootImageManaged && image != nil:
		diags = append(diags, errAt(image.NameRange, "Image of a managed boot image",
			fmt.Sprintf("Pool %q: a managed boot image is the boot_image of the pool's OS image; to choose one, set policy = \"pinned\".", pool)))
	}
	first := map[string]hcl.Range{}
	for _, bb := range content.Blocks {
		if prev, ok := first[bb.Type]; ok {
			diags = append(diags, duplicate(bb.Type+" block", "", bb.DefRange, prev))
			continue
		}
		first[bb.Type] = bb.DefRange
		switch bb.Type {
		case "machine_templates":
			sel, d := l.templateSelection(bb)
			diags = append(diags, d...)
			bi.Templates = sel
		case "user_data":
			u, d := l.userData(bb)
			diags = append(diags, d...)
			bi.UserData = u
		}
	}
	return bi, diags
}

// bootImageRef reads image = boot_image.NAME.
func (l *loader) bootImageRef(a *hcl.Attribute) (string, hcl.Diagnostics) {
	bad := errAt(a.Expr.Range(), "Invalid boot image reference",
		fmt.Sprintf("image must name a boot_image block, as boot_image.NAME (declared: %s).", l.bootImageNames()))
	t, d := hcl.AbsTraversalForExpr(a.Expr)
	if d.HasErrors() || len(t) != 2 || t.RootName() != "boot_image" {
		return "", hcl.Diagnostics{bad}
	}
	attr, ok := t[1].(hcl.TraverseAttr)
	if !ok {
		return "", hcl.Diagnostics{bad}
	}
	if l.d.BootImageDef(attr.Name) == nil {
		return "", hcl.Diagnostics{errAt(a.Expr.Range(), "Unknown boot image",
			fmt.Sprintf("boot_image.%s is not declared (declared: %s).", attr.Name, l.bootImageNames()))}
	}
	return attr.Name, nil
}

func (l *loader) bootImageNames() string {
	if len(l.d.BootImages) == 0 {
		return "none"
	}
	var s []string
	for _, b := range l.d.BootImages {
		s = append(s, "boot_image."+b.Name)
	}
	return strings.Join(s, ", ")
}

var templateSelectionSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "selection"}, {Name: "match_labels"}}}

// templateSelection reads machine_templates { selection = "all" | "partial", match_labels }.
func (l *loader) templateSelection(b *hcl.Block) (*model.TemplateSelection, hcl.Diagnostics) {
	s := &model.TemplateSelection{Mode: model.TemplatesAll, DeclRange: hclpos.From(b.DefRange)}
	content, diags := b.Body.Content(templateSelectionSchema)
	diags = append(diags, setEnum(l, content.Attributes, "selection", &s.Mode, "Invalid selection",
		"selection %q: use \"all\" (every template that makes the pool's nodes) or \"partial\" (those with match_labels).",
		model.TemplatesAll, model.TemplatesPartial)...)
	labels := content.Attributes["match_labels"]
	if labels != nil {
		m, d := l.kubeLabels(labels)
		diags = append(diags, d...)
		s.MatchLabels = m
	}
	switch {
	case s.Mode == model.TemplatesPartial && len(s.MatchLabels) == 0 && labels == nil:
		diags = append(diags, errAt(b.DefRange, "Partial selection without labels", `selection = "partial" needs match_labels = { … }.`))
	case s.Mode == model.TemplatesPartial && len(s.MatchLabels) == 0:
		diags = append(diags, errAt(labels.Expr.Range(), "Empty match_labels", `selection = "partial" needs at least one label.`))
	case s.Mode == model.TemplatesAll && labels != nil:
		diags = append(diags, errAt(labels.NameRange, "Labels of an \"all\" selection",
			`match_labels selects only with selection = "partial"; with "all" it would be ignored.`))
	}
	return s, diags
}

var userDataSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "secret", Required: true}, {Name: "key"},
	{Name: "url", Required: true}, {Name: "ca_file"}, {Name: "token_file"}}}

// userData reads user_data { secret = "NS/NAME", key, url, ca_file, token_file }: the
// Secret apply keeps holding the pool's pointer config. The files are read when the
// pointer config is built, so that a renewed CA or token shows in the next plan.
func (l *loader) userData(b *hcl.Block) (*model.UserData, hcl.Diagnostics) {
	u := &model.UserData{Key: "userData", DeclRange: hclpos.From(b.DefRange)}
	content, diags := b.Body.Content(userDataSchema)
	for _, a := range sortedAttrs(content.Attributes) {
		v, d := l.str(a)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		switch a.Name {
		case "secret":
			ns, name, ok := strings.Cut(v, "/")
			if !ok || !dnsLabel(ns) || !dnsSubdomain(name) {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid secret",
					fmt.Sprintf("secret %q: want \"NAMESPACE/NAME\", as Kubernetes names them (e.g. \"openshift-machine-api/worker-user-data\").", v)))
			}
			u.Namespace, u.Name = ns, name
		case "key":
			if v == "" {
				diags = append(diags, errAt(a.Expr.Range(), "Empty key", "key names the Secret's data key (default \"userData\")."))
			}
			u.Key = v
		case "url":
			if p, err := url.Parse(v); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				diags = append(diags, errAt(a.Expr.Range(), "Invalid url", fmt.Sprintf("url %q: want the boot server's base URL, such as \"https://boot.example:8443\".", v)))
			}
			u.URL = v
		case "ca_file":
			u.CAFile = l.absPath(v)
		case "token_file":
			u.TokenFile = l.absPath(v)
		}
	}
	return u, diags
}

// dnsLabel and dnsSubdomain are Kubernetes' rules for a namespace and a Secret's name.
func dnsLabel(s string) bool {
	return len(s) > 0 && len(s) <= 63 && dnsChars(s, false)
}

func dnsSubdomain(s string) bool {
	return len(s) > 0 && len(s) <= 253 && dnsChars(s, true)
}

func dnsChars(s string, dots bool) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case (r == '-' || (dots && r == '.')) && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// setEnum sets *dst from the attribute name, when it is there and one of allowed.
func setEnum[T ~string](l *loader, attrs hcl.Attributes, name string, dst *T, summary, detail string, allowed ...T) hcl.Diagnostics {
	a := attrs[name]
	if a == nil {
		return nil
	}
	v, ok, d := enum(l, a, summary, detail, allowed...)
	if ok {
		*dst = v
	}
	return d
}

// enumOr is enum's value, or def when the attribute is not one of allowed (its
// diagnostic says so).
func enumOr[T ~string](l *loader, a *hcl.Attribute, def T, summary, detail string, allowed ...T) (T, hcl.Diagnostics) {
	v, ok, d := enum(l, a, summary, detail, allowed...)
	if !ok {
		return def, d
	}
	return v, d
}

// enum reads a string attribute that must be one of allowed; detail (a format with the
// value given) says what the choices mean.
func enum[T ~string](l *loader, a *hcl.Attribute, summary, detail string, allowed ...T) (T, bool, hcl.Diagnostics) {
	v, d := l.str(a)
	if d.HasErrors() {
		return "", false, d
	}
	if slices.Contains(allowed, T(v)) {
		return T(v), true, d
	}
	return "", false, append(d, errAt(a.Expr.Range(), summary, fmt.Sprintf(detail, v)))
}
