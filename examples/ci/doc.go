// Package ci is the example of a CI job that plans a pull request (README.md here): its
// GitHub and GitLab jobs, and the Rego policy over the plan JSON. It holds no code; its test
// (ci_test.go) runs what the jobs run with the real mcp binary, the real OPA and Terraform's
// terraform-json, which are imported there only, so mcp links neither.
package ci
