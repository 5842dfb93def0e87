// Package kubeconfig finds the cluster the way kubectl does, for every part of mcp that
// talks to one (the provider, the state backend, the agent): the kubeconfig file named,
// else $KUBECONFIG, else ~/.kube/config, with its current context unless another is named;
// and, when none of these exists and mcp runs in a pod, the pod's service account.
package kubeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/mcpfleet/mcp/internal/boundedfile"
)

// Load returns the REST config for the kubeconfig file path ("" for the usual search) and
// context ("" for the file's current one).
func Load(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	if err := regularFiles(rules.GetLoadingPrecedence()); err != nil {
		return nil, err
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	if raw, err := cc.RawConfig(); err == nil {
		if err := regularFiles(namedFiles(&raw)); err != nil {
			return nil, err
		}
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "mcp"
	return cfg, nil
}

// Find is Load for a command with an -in-cluster flag: inCluster takes the pod's service
// account even where a kubeconfig exists.
func Find(path string, inCluster bool) (*rest.Config, error) {
	if inCluster {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("-in-cluster: %w", err)
		}
		return cfg, nil
	}
	cfg, err := Load(path, "")
	if err != nil {
		return nil, fmt.Errorf("finding the cluster: %w", err)
	}
	return cfg, nil
}

// regularFiles refuses any of paths that exists and is not a regular file, before
// client-go, which reads files with a plain open, reads it: a FIFO would block that open
// for ever (internal/boundedfile opens without blocking and says what the file is).
func regularFiles(paths []string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		f, _, err := boundedfile.Open(p, os.O_RDONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		f.Close()
	}
	return nil
}

// namedFiles are the files a kubeconfig names: certificates, keys, token files.
func namedFiles(c *clientcmdapi.Config) []string {
	var out []string
	for _, cl := range c.Clusters {
		out = append(out, cl.CertificateAuthority)
	}
	for _, a := range c.AuthInfos {
		out = append(out, a.ClientCertificate, a.ClientKey, a.TokenFile)
	}
	return out
}
