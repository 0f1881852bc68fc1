package cni

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// NodeIdentity is netshift-cni's kubeconfig made from the node's own (the
// kubelet's, at from): its current context alone, with the credentials
// inlined, so that the file works wherever it is read from.
func NodeIdentity(from string) ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return nil, fmt.Errorf("the node's kubeconfig %s: %w", from, err)
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, fmt.Errorf("the node's kubeconfig %s: inline its credentials: %w", from, err)
	}
	if err := clientcmdapi.MinifyConfig(cfg); err != nil {
		return nil, fmt.Errorf("the node's kubeconfig %s: %w", from, err)
	}
	return clientcmd.Write(*cfg)
}
