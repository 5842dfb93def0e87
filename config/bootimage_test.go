package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mcpfleet/mcp/model"
)

func TestBootImages(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "main.hcl", `provider "local" { fleet = "f" }
boot_image "fcos-41" {
  os_image = "quay.io/fcos:41"
  images   = { gcp = "projects/p/global/images/fcos-41", aws = "ami-41" }
}
boot_image "fcos-40" { os_image = "quay.io/fcos:40" }
pool "worker" {
  os_image = "quay.io/fcos:41"
  boot_image {
    skew = "enforce"
    machine_templates {
      selection    = "partial"
      match_labels = { "mcpfleet.io/boot-image" = "managed" }
    }
  }
}
pool "infra" {
  boot_image {
    policy = "pinned"
    image  = boot_image.fcos-40
  }
}
pool "edge" {}
`)
	res, diags := Load(dir, Options{Schemas: testSchemas})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	d := res.Desired
	ignore := cmpopts.IgnoreFields(model.BootImageDef{}, "DeclRange")
	want := []model.BootImageDef{{Name: "fcos-40", OSImage: "quay.io/fcos:40"},
		{Name: "fcos-41", OSImage: "quay.io/fcos:41", Images: map[string]string{"gcp": "projects/p/global/images/fcos-41", "aws": "ami-41"}}}
	if diff := cmp.Diff(want, d.BootImages, ignore); diff != "" {
		t.Errorf("boot images (-want +got):\n%s", diff)
	}
	ignorePool := cmpopts.IgnoreFields(model.BootImage{}, "DeclRange")
	ignoreSel := cmpopts.IgnoreFields(model.TemplateSelection{}, "DeclRange")
	for pool, want := range map[string]model.BootImage{
		"worker": {Policy: model.BootImageManaged, Skew: model.SkewEnforce, Declared: true, Templates: &model.TemplateSelection{
			Mode: model.TemplatesPartial, MatchLabels: map[string]string{"mcpfleet.io/boot-image": "managed"}}},
		"infra": {Policy: model.BootImagePinned, Image: "fcos-40", Skew: model.SkewWarn, Declared: true},
		"edge":  {Policy: model.BootImageManaged, Skew: model.SkewWarn},
	} {
		if diff := cmp.Diff(want, d.Pool(pool).BootImage, ignorePool, ignoreSel); diff != "" {
			t.Errorf("pool %s boot_image (-want +got):\n%s", pool, diff)
		}
	}
	if b, err := d.ResolveBootImage(d.Pool("worker"), "quay.io/fcos:41"); err != nil || b.Name != "fcos-41" {
		t.Errorf("worker resolves to %v, %v", b, err)
	}
	if b, err := d.ResolveBootImage(d.Pool("infra"), "quay.io/fcos:41"); err != nil || b.Name != "fcos-40" {
		t.Errorf("infra resolves to %v, %v", b, err)
	}
	if _, err := d.ResolveBootImage(d.Pool("edge"), "quay.io/fcos:42"); err == nil {
		t.Error("edge: no boot_image has its OS image, and no error")
	}
}

func TestBootImageErrors(t *testing.T) {
	const base = "provider \"local\" { fleet = \"f\" }\nboot_image \"a\" { os_image = \"quay.io/x:1\" }\n"
	for _, tt := range []struct {
		name, src, summary string
		line, col          int
	}{
		{"string image", `pool "p" {
  boot_image {
    policy = "pinned"
    image  = "quay.io/x:1"
  }
}`, "Invalid boot image reference", 4, 14},
		{"unknown image", `pool "p" {
  boot_image {
    policy = "pinned"
    image  = boot_image.b
  }
}`, "Unknown boot image", 4, 14},
		{"pinned without image", `pool "p" {
  boot_image { policy = "pinned" }
}`, "Pinned boot image without an image", 2, 3},
		{"image of a managed pool", `pool "p" {
  boot_image { image = boot_image.a }
}`, "Image of a managed boot image", 2, 16},
		{"bad policy", `pool "p" {
  boot_image { policy = "latest" }
}`, "Invalid boot image policy", 2, 25},
		{"bad skew", `pool "p" {
  boot_image { skew = "strict" }
}`, "Invalid skew", 2, 23},
		{"two boot_image blocks", `pool "p" {
  boot_image {}
  boot_image {}
}`, "Duplicate boot_image block", 3, 3},
		{"partial without labels", `pool "p" {
  boot_image {
    machine_templates { selection = "partial" }
  }
}`, "Partial selection without labels", 3, 5},
		{"labels of all", `pool "p" {
  boot_image {
    machine_templates { match_labels = { a = "b" } }
  }
}`, "Labels of an \"all\" selection", 3, 25},
		{"bad selection", `pool "p" {
  boot_image {
    machine_templates { selection = "some" }
  }
}`, "Invalid selection", 3, 37},
		{"same OS image twice", `boot_image "b" { os_image = "quay.io/x:1" }`, "Two boot images of one OS image", 1, 29},
		{"duplicate name", `boot_image "a" { os_image = "quay.io/x:2" }`, "Duplicate boot_image", 1, 12},
		{"no os_image", `boot_image "c" { images = { gcp = "x" } }`, "Missing required argument", 1, 18},
		{"empty image", `boot_image "c" {
  os_image = "quay.io/x:3"
  images   = { gcp = "" }
}`, "Empty boot image", 3, 14},
	} {
		t.Run(tt.name, func(t *testing.T) { diagAt(t, base, tt.src, tt.summary, tt.line, tt.col) })
	}
}
