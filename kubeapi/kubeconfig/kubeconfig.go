// Package kubeconfig finds the cluster the way kubectl does, for every part of mcp that
// talks to one (the provider, the state backend, the agent): the kubeconfig file named,
// else $KUBECONFIG, else ~/.kube/config, with its current context unless another is named;
// and, when none of these exists and mcp runs in a pod, the pod's service account.
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Load returns the REST config for the kubeconfig file path ("" for the usual search) and
// context ("" for the file's current one).
func Load(path, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
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
