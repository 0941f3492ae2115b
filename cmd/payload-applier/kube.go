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

// budgetFlags set the client-side request rate (apply.Budget): one for a
// pass that installs, one for the rest.
type budgetFlags struct {
	steady, install apply.Rate
}

// add registers the flags with def's values as defaults.
func (f *budgetFlags) add(cmd *cobra.Command, def apply.Budget) {
	cmd.Flags().Float32Var(&f.steady.QPS, "kube-api-qps", def.Steady.QPS, "client-side requests per second to the apiserver while updating or reconciling; 0 sets no limit")
	cmd.Flags().IntVar(&f.steady.Burst, "kube-api-burst", def.Steady.Burst, "requests sent at once, beyond --kube-api-qps, while updating or reconciling")
	cmd.Flags().Float32Var(&f.install.QPS, "install-kube-api-qps", def.Install.QPS, "client-side requests per second to the apiserver while installing; 0 sets no limit")
	cmd.Flags().IntVar(&f.install.Burst, "install-kube-api-burst", def.Install.Burst, "requests sent at once, beyond --install-kube-api-qps, while installing")
}

func (f *budgetFlags) budget() (apply.Budget, error) {
	b := apply.Budget{Install: f.install, Steady: f.steady}
	if err := f.steady.Validate(); err != nil {
		return b, fmt.Errorf("--kube-api-qps/--kube-api-burst: %w", err)
	}
	if err := f.install.Validate(); err != nil {
		return b, fmt.Errorf("--install-kube-api-qps/--install-kube-api-burst: %w", err)
	}
	return b, nil
}
