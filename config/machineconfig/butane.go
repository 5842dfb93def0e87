package machineconfig

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// A Butane config of variant openshift is a MachineConfig written in Butane (how
// OpenShift's documentation has people write node configuration): Butane's own library
// translates it to the MachineConfig's YAML (butane.ToMachineConfig), which is read here
// as every MachineConfig is, with the MCO's semantics, but spoken of in the Butane text's
// terms: its fields' names and places.

// butaneFields are the names the Butane text gives the spec fields its openshift section
// translates to.
var butaneFields = map[string]string{
	"kernelArguments": "openshift.kernel_arguments",
	"kernelType":      "openshift.kernel_type",
	"fips":            "openshift.fips",
	"extensions":      "openshift.extensions",
}

// FromButane reads mc, the MachineConfig YAML Butane translated text (variant openshift)
// to, as Parse reads a MachineConfig. Problems and kernel arguments are placed at the
// field of text they came from and name its fields (openshift.fips); those about
// spec.config, and its items, have no place in text, only their path in the translated
// Ignition config.
func FromButane(mc, text []byte, checks Checks) ([]MachineConfig, []Problem) {
	p := &parser{checks: checks, butane: &yaml.Node{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err == nil && len(doc.Content) > 0 {
		p.butane = doc.Content[0]
	}
	return parse(mc, p)
}

// butanePlaces maps the places of mc (the MachineConfig document Butane wrote) to the
// places in bu (the Butane text's document) of the fields they came from: metadata to
// metadata, spec.kernelArguments, kernelType, fips and extensions to the openshift
// section's. spec.config is not mapped: Butane's sugar (trees, boot_device, mount units)
// adds entries to it, so the same path can name another entry in the text.
func butanePlaces(mc, bu *yaml.Node) map[Pos]Pos {
	m := map[Pos]Pos{at(mc): at(bu)}
	pairKey(m, mc, "metadata", bu, "metadata")
	spec, os := get(mc, "spec"), get(bu, "openshift")
	for field, name := range butaneFields {
		pairKey(m, spec, field, os, strings.TrimPrefix(name, "openshift."))
	}
	return m
}

// pairKey maps the key and value of mk in mapping a to those of bk in mapping b.
func pairKey(m map[Pos]Pos, a *yaml.Node, mk string, b *yaml.Node, bk string) {
	ak, av := entry(a, mk)
	bkn, bv := entry(b, bk)
	if ak == nil || bkn == nil {
		return
	}
	m[at(ak)] = at(bkn)
	pair(m, av, bv)
}

// pair maps a to b and, as far as they have the same shape, what they hold: mappings by
// key, sequences by index.
func pair(m map[Pos]Pos, a, b *yaml.Node) {
	m[at(a)] = at(b)
	switch {
	case a.Kind == yaml.MappingNode && b.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(a.Content); i += 2 {
			pairKey(m, a, a.Content[i].Value, b, a.Content[i].Value)
		}
	case a.Kind == yaml.SequenceNode && b.Kind == yaml.SequenceNode:
		for i := range min(len(a.Content), len(b.Content)) {
			pair(m, a.Content[i], b.Content[i])
		}
	}
}

// entry is the key and value nodes of key in mapping n, or nils.
func entry(n *yaml.Node, key string) (k, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}
