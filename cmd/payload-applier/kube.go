package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/payload-applier/payload-applier/pkg/apply"
)

// clusterFlags are the flags every command that talks to a cluster shares.
type clusterFlags struct {
	kubeconfig string
	namespace  string
}

func (f *clusterFlags) add(cmd *cobra.Command) {
	f.addKubeconfig(cmd)
	cmd.Flags().StringVar(&f.namespace, "namespace", apply.DefaultSelf().Namespace, "namespace of the applier's ledger, lease and events")
}

// addKubeconfig adds only --kubeconfig, for commands that touch no state
// of the applier's own.
func (f *clusterFlags) addKubeconfig(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "path to a kubeconfig; default $KUBECONFIG, then the in-cluster config, then ~/.kube/config")
}

// restConfig resolves the cluster: --kubeconfig, then $KUBECONFIG, then the
// in-cluster config, then ~/.kube/config.
func (f *clusterFlags) restConfig() (*rest.Config, error) {
	if f.kubeconfig != "" {
		return fromKubeconfig(f.kubeconfig)
	}
	if env := os.Getenv("KUBECONFIG"); env != "" {
		return fromKubeconfig(env)
	}
	if cfg, err := rest.InClusterConfig(); err == nil {
		return cfg, nil
	} else if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, fmt.Errorf("in-cluster config: %w", err)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to: pass --kubeconfig or set KUBECONFIG (%v)", err)
	}
	return cfg, nil
}

func fromKubeconfig(path string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: []string{}}
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// checkOutput validates an --output value.
func checkOutput(value string, allowed ...string) error {
	for _, a := range allowed {
		if value == a {
			return nil
		}
	}
	return withExitCode(exitUsage, fmt.Errorf("--output must be one of %v, not %q", allowed, value))
}
