// Package modeltest builds model values for tests, from the short forms people write.
package modeltest

import "github.com/mcpfleet/mcp/model"

// Policies parses on_change policies ("none", "restart:chronyd.service"); a bad one panics.
func Policies(s ...string) []model.Policy {
	var out []model.Policy
	for _, x := range s {
		p, err := model.ParsePolicy(x)
		if err != nil {
			panic(err)
		}
		out = append(out, p)
	}
	return out
}

// File is a managed file of mode 0644 with content and on_change policies.
func File(path, content string, policies ...string) model.File {
	return model.File{Entry: model.Entry{Path: path, OnChange: Policies(policies...)}, Mode: 0o644, Contents: []byte(content)}
}
