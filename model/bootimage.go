package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// BootImageDef is a boot_image "NAME" block: an OS image, and the images per platform that
// boot it (what a machine template or `mcp fleet add` starts a new node from).
type BootImageDef struct {
	Name    string `json:"name"`
	OSImage string `json:"os_image"`
	// Images maps a platform (gcp, aws, azure, vsphere, local, …) to the reference of the
	// image on it ("projects/…/images/…", "ami-…"). "local" is the local fleet's: a node
	// added with `mcp fleet add` boots it (it defaults to OSImage).
	Images    map[string]string `json:"images,omitempty"`
	DeclRange Range             `json:"-"`
}

// ImageFor is the image reference on platform, and whether the block has one. The local
// fleet boots OS images directly, so its image defaults to OSImage.
func (b *BootImageDef) ImageFor(platform string) (string, bool) {
	if v, ok := b.Images[platform]; ok {
		return v, true
	}
	if platform == PlatformLocal {
		return b.OSImage, true
	}
	return "", false
}

// Platforms lists the platforms the block has an image for, sorted.
func (b *BootImageDef) Platforms() []string { return slices.Sorted(maps.Keys(b.Images)) }

// PlatformLocal is the local fleet's platform name in a boot_image's images.
const PlatformLocal = "local"

// BootImagePolicy is how a pool chooses the image its new nodes boot.
type BootImagePolicy string

const (
	// BootImageManaged: the boot_image whose os_image is the pool's OS image, following it
	// as it changes (the default).
	BootImageManaged BootImagePolicy = "managed"
	// BootImagePinned: the boot_image the pool names, whatever its OS image is.
	BootImagePinned BootImagePolicy = "pinned"
)

// SkewPolicy is what a plan does when new nodes of a pool would boot an image other than
// the pool's OS image (they then pivot at first boot).
type SkewPolicy string

const (
	SkewWarn    SkewPolicy = "warn"    // show it (the default)
	SkewEnforce SkewPolicy = "enforce" // refuse to apply while it lasts
)

// BootImage is a pool's boot_image block.
type BootImage struct {
	Policy BootImagePolicy
	// Image names the boot_image block a pinned pool boots (boot_image.NAME).
	Image string
	Skew  SkewPolicy
	// Templates selects the machine templates (MachineSets, Cluster API infrastructure
	// templates) whose boot image apply keeps at the pool's; nil: none are managed.
	Templates *TemplateSelection
	// UserData is the Secret of the pointer config apply keeps current; nil: none.
	UserData *UserData
	// Declared is true when the pool has a boot_image block.
	Declared  bool
	DeclRange Range
}

// TemplateSelection is a pool's machine_templates block: which of the machine templates
// that create the pool's nodes (their node labels match the pool's node_selector) apply
// manages. All (the default), or Partial: only those whose own labels include
// MatchLabels, as the OKD's managedBootImages machine managers select.
type TemplateSelection struct {
	Mode        TemplateMode
	MatchLabels map[string]string
	DeclRange   Range
}

// TemplateMode is a TemplateSelection's mode.
type TemplateMode string

const (
	TemplatesAll     TemplateMode = "all"
	TemplatesPartial TemplateMode = "partial"
)

// Selects reports whether the selection takes a template with these labels.
func (s *TemplateSelection) Selects(labels map[string]string) bool {
	if s == nil {
		return false
	}
	if s.Mode != TemplatesPartial {
		return true
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// BootImageDef returns the boot_image block named name, or nil.
func (d *Desired) BootImageDef(name string) *BootImageDef {
	for i := range d.BootImages {
		if d.BootImages[i].Name == name {
			return &d.BootImages[i]
		}
	}
	return nil
}

// ManagesBootImage reports whether the pool's boot image is managed at all: it has a
// boot_image block, or the configuration declares boot_image blocks (then every pool is
// managed by default). A configuration with neither leaves boot images alone, as before
// boot images existed.
func (d *Desired) ManagesBootImage(p *Pool) bool {
	return p.BootImage.Declared || len(d.BootImages) > 0
}

// ResolveBootImage is the boot_image block the pool's new nodes boot, given the pool's
// OS image (its rendered config's): pinned, the block it names; managed, the block whose
// os_image is osImage. Nil and no error when the pool's boot image is not managed, or
// when the pool has no boot_image block and no OS image (nothing to follow).
func (d *Desired) ResolveBootImage(p *Pool, osImage string) (*BootImageDef, error) {
	if !d.ManagesBootImage(p) {
		return nil, nil
	}
	if p.BootImage.Policy == BootImagePinned {
		if b := d.BootImageDef(p.BootImage.Image); b != nil {
			return b, nil
		}
		return nil, fmt.Errorf("pool %q pins boot_image.%s, which is not declared (known: %s)", p.Name, p.BootImage.Image, d.bootImageList())
	}
	if osImage == "" && !p.BootImage.Declared {
		return nil, nil // a pool that names no OS image and asks nothing has none to follow
	}
	if osImage == "" {
		return nil, fmt.Errorf("pool %q has a managed boot image but no OS image (os_image) for it to follow; "+
			"give the pool an os_image or pin a boot_image (policy = \"pinned\", image = boot_image.NAME)", p.Name)
	}
	for i := range d.BootImages {
		if d.BootImages[i].OSImage == osImage {
			return &d.BootImages[i], nil
		}
	}
	return nil, fmt.Errorf("pool %q has a managed boot image, and no boot_image block has its OS image %q (known: %s); "+
		"declare a boot_image with os_image = %q, or pin one (policy = \"pinned\")", p.Name, osImage, d.bootImageList(), osImage)
}

func (d *Desired) bootImageList() string {
	if len(d.BootImages) == 0 {
		return "none"
	}
	var s []string
	for _, b := range d.BootImages {
		s = append(s, fmt.Sprintf("boot_image.%s (os_image %q)", b.Name, b.OSImage))
	}
	return strings.Join(s, ", ")
}

// MachineTemplate is a template that creates nodes, as a provider observed it: an OpenShift
// MachineSet (machine.openshift.io/v1beta1) or a Cluster API infrastructure machine
// template used by a MachineDeployment.
type MachineTemplate struct {
	// Kind and APIVersion are the object's; Namespace and Name name it.
	Kind       string `json:"kind"`
	APIVersion string `json:"api_version"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	// Labels are the template object's own labels (a TemplateSelection's MatchLabels);
	// NodeLabels are the labels the nodes it creates carry (a pool's node_selector).
	Labels     map[string]string `json:"labels,omitempty"`
	NodeLabels map[string]string `json:"node_labels,omitempty"`
	// Owner names what uses an infrastructure template ("MachineDeployment/NS/NAME").
	Owner string `json:"owner,omitempty"`
	// Platform is the cloud (gcp, aws, azure, vsphere, …) the template is for; Field is
	// where its boot image is (a JSON path, for people); Image is the reference there now.
	Platform string `json:"platform,omitempty"`
	Field    string `json:"field,omitempty"`
	Image    string `json:"image,omitempty"`
	// Unsupported says why mcp cannot manage this template's image ("" when it can):
	// an unknown platform, no image field found.
	Unsupported string `json:"unsupported,omitempty"`
	// LastError is why the API server last refused to set the template's image (an
	// admission webhook's message), as apply recorded it on the template; "" after a set
	// that succeeded. A template whose image is the wanted one is reconciled whatever it says.
	LastError string `json:"last_error,omitempty"`
}

// ID names the template as "Kind/namespace/name".
func (t *MachineTemplate) ID() string { return t.Kind + "/" + t.Namespace + "/" + t.Name }

// MakesNodesFor reports whether the template's nodes are the pool's (they carry every
// label of its node_selector).
func (t *MachineTemplate) MakesNodesFor(p *Pool) bool {
	for k, v := range p.NodeSelector {
		if got, ok := t.NodeLabels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// UserData is a pool's user_data block: the Secret that machine templates give new nodes
// as user-data, which apply keeps holding the pool's pointer config (as `mcp pointer`
// prints it: the boot server's URL for the pool, the CA to trust, the token to send).
type UserData struct {
	Namespace, Name string
	Key             string // the Secret's data key; default "userData", as MachineSets read it
	URL             string // the boot server's base URL
	// CAFile and TokenFile are read when the pointer config is built (absolute paths).
	CAFile, TokenFile string
	DeclRange         Range
}

// SecretID names the Secret as "namespace/name".
func (u *UserData) SecretID() string { return u.Namespace + "/" + u.Name }

// UserDataObject is a user-data Secret as apply observed it.
type UserDataObject struct {
	Pool      string `json:"pool"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Key       string `json:"key"`
	// Digest is "sha256:<hex>" of the key's value with its HTTP header values (the bearer
	// token) left out (ignition.RedactPointer); "" when the Secret or the key is absent.
	// Nothing from which a guessed token could be checked is kept: plans are shared.
	Digest string `json:"digest,omitempty"`
	// TokenCurrent is true when the header values left out are the ones the pool's pointer
	// config carries now (compared in memory, at refresh).
	TokenCurrent bool `json:"token_current,omitempty"`
}
