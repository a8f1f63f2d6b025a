package helm

import (
	"fmt"
	"log/slog"

	"helm.sh/helm/v4/pkg/action"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	dkube "cairn.dev/cairn/deployer/kube"
)

// storageDriver is Helm's own release storage: Secrets in the release's
// namespace, what `helm list -n NS` reads.
const storageDriver = "secrets"

// getter gives Helm the clients of one cluster from a rest.Config (Helm's
// genericclioptions.RESTClientGetter), with a discovery cache shared by
// every release of the cluster.
type getter struct {
	cfg       *rest.Config
	namespace string
	disc      discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
}

func (g *getter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) { return g.disc, nil }

func (g *getter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

// ToRawKubeConfigLoader says the release's namespace; cairn never reads a
// kubeconfig file for Helm.
func (g *getter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return namespaceConfig{cfg: g.cfg, namespace: g.namespace}
}

// namespaceConfig is a clientcmd.ClientConfig of a rest.Config and a
// namespace.
type namespaceConfig struct {
	cfg       *rest.Config
	namespace string
}

func (n namespaceConfig) RawConfig() (clientcmdapi.Config, error) {
	return *clientcmdapi.NewConfig(), nil
}
func (n namespaceConfig) ClientConfig() (*rest.Config, error) { return rest.CopyConfig(n.cfg), nil }
func (n namespaceConfig) Namespace() (string, bool, error)    { return n.namespace, true, nil }
func (n namespaceConfig) ConfigAccess() clientcmd.ConfigAccess {
	return clientcmd.NewDefaultClientConfigLoadingRules()
}

// getterOf returns a getter on cluster for namespace, sharing the
// cluster's discovery cache and RESTMapper.
func getterOf(c *dkube.Cluster, namespace string) *getter {
	return &getter{cfg: c.Config, namespace: namespace, disc: c.Discovery, mapper: c.Mapper}
}

// actionConfig returns Helm's action configuration for releases in the
// getter's namespace, with Secrets storage. Helm's own logs are dropped:
// its errors come back to the deployer, which reports them redacted, and
// its debug logs may quote manifests and values.
func actionConfig(g *getter) (*action.Configuration, error) {
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	if err := cfg.Init(g, g.namespace, storageDriver); err != nil {
		return nil, fmt.Errorf("helm: action configuration: %w", err)
	}
	return cfg, nil
}
