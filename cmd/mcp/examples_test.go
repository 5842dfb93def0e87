package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/mcpfleet/mcp/config"
	"github.com/mcpfleet/mcp/deploy"
)

// TestDriftExamplesRun holds examples/drift to the real command: the CronJob's and the
// systemd service's command lines run against a local fleet (their -chdir pointed at it)
// and exit 0 on a clean fleet and 2 on drift; the CronJob's configuration loads.
func TestDriftExamplesRun(t *testing.T) {
	b, err := os.ReadFile("../../examples/drift/cronjob.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job *batchv1.CronJob
	var cm *corev1.ConfigMap
	rules := map[string][]rbacv1.PolicyRule{} // "Kind namespace/name": the example's RBAC
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("cronjob.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *batchv1.CronJob:
			job = o
		case *corev1.ConfigMap:
			cm = o
		case *rbacv1.ClusterRole:
			rules["ClusterRole /"+o.Name] = o.Rules
		case *rbacv1.Role:
			rules["Role "+o.Namespace+"/"+o.Name] = o.Rules
		}
	}
	// The example's roles carry deploy/'s names and namespaces: applying one over the other
	// must not change what the drift runner may do, nor where.
	objs, err := deploy.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o}
		key := u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
		ex, ok := rules[key]
		if !ok || (u.GetKind() != "ClusterRole" && u.GetKind() != "Role") {
			continue
		}
		var r rbacv1.ClusterRole // a Role's rules decode the same
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o, &r); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(r.Rules, ex); d != "" {
			t.Errorf("examples/drift/cronjob.yaml's %s differs from deploy/'s (-deploy +example):\n%s", key, d)
		}
		delete(rules, key)
	}
	if len(rules) != 0 {
		t.Errorf("examples/drift/cronjob.yaml's roles %v are not deploy/'s", slices.Collect(maps.Keys(rules)))
	}
	if job == nil || cm == nil {
		t.Fatal("cronjob.yaml lacks the CronJob or its ConfigMap")
	}
	cfg := t.TempDir()
	os.WriteFile(filepath.Join(cfg, "main.hcl"), []byte(cm.Data["main.hcl"]), 0o644)
	if _, diags := config.Load(cfg, config.Options{Schemas: parts.Schemas()}); diags.HasErrors() {
		t.Errorf("the CronJob's configuration: %v", diags)
	}
	c := job.Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	cron := append(append([]string(nil), c.Command...), c.Args...)

	unit, err := os.ReadFile("../../examples/drift/mcp-drift.service")
	if err != nil {
		t.Fatal(err)
	}
	var service []string
	for _, l := range strings.Split(string(unit), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			service = strings.Fields(v)
		}
	}

	dir := driftFleet(t)
	lines := map[string][]string{"cronjob.yaml": cron, "mcp-drift.service": service}
	for name, argv := range lines {
		if len(argv) < 2 || filepath.Base(argv[0]) != "mcp" {
			t.Fatalf("%s: command %q does not run mcp", name, argv)
		}
		if code, out, errOut := runAt(argv[1:], dir); code != 0 {
			t.Errorf("%s on a clean fleet: exit %d, want 0\n%s%s", name, code, out, errOut)
		}
	}
	introduceDrift(t, dir)
	for name, argv := range lines {
		if code, out, errOut := runAt(argv[1:], dir); code != 2 {
			t.Errorf("%s on a drifted fleet: exit %d, want 2\n%s%s", name, code, out, errOut)
		}
	}
}

// runAt runs mcp with args, its -chdir pointed at dir.
func runAt(args []string, dir string) (int, string, string) {
	args = slices.Clone(args)
	for i, a := range args {
		if strings.HasPrefix(a, "-chdir=") {
			args[i] = "-chdir=" + dir
		}
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}
