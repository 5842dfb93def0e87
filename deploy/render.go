package deploy

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Kustomization is kustomization.yaml: the manifests in order and the image by digest.
//
//go:embed kustomization.yaml
var kustomization []byte

// Image is the kustomization's images: entry for the name the manifests use (`mcp`).
type Image struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	Digest  string `json:"digest"`
}

// Ref is the image reference the rendered manifests carry: NEWNAME@DIGEST.
func (i Image) Ref() string { return i.NewName + "@" + i.Digest }

type kustomizationFile struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []Image  `json:"images"`
}

// Kustomization returns the resources (file names, in order) and the images entries.
func Kustomization() (resources []string, images []Image, err error) {
	var k kustomizationFile
	if err := yaml.UnmarshalStrict(kustomization, &k); err != nil {
		return nil, nil, fmt.Errorf("deploy/kustomization.yaml: %w", err)
	}
	return k.Resources, k.Images, nil
}

// Render is what `kubectl kustomize deploy/` gives, for the one transformation the
// kustomization makes: every container image named like an images: entry becomes
// NEWNAME@DIGEST. The objects come in the resources' order, as YAML documents.
func Render() ([]map[string]any, error) {
	resources, images, err := Kustomization()
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	for _, f := range resources {
		b, err := Manifests.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("deploy/kustomization.yaml names %s: %w", f, err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			var obj map[string]any
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(obj) == 0 {
				continue
			}
			setImages(obj, images)
			out = append(out, obj)
		}
	}
	return out, nil
}

// setImages rewrites the images of a workload's pod template.
func setImages(obj map[string]any, images []Image) {
	spec, _ := dig(obj, "spec", "template", "spec").(map[string]any)
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			c, _ := c.(map[string]any)
			img, _ := c["image"].(string)
			name, _, _ := strings.Cut(img, "@")
			name, _, _ = strings.Cut(name, ":")
			for _, i := range images {
				if i.Name == name {
					c["image"] = i.Ref()
				}
			}
		}
	}
}

func dig(m map[string]any, path ...string) any {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}
