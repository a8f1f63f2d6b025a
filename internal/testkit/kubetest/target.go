package kubetest

import (
	"context"
	"encoding/json"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// KubeconfigKey is the key under which CreateTarget's Secret holds the
// kubeconfig.
const KubeconfigKey = "kubeconfig"

// CreateTarget makes the cluster a cairn deploy target, as a user would:
// through cl it creates in namespace ns the Secret secret holding the
// cluster's admin kubeconfig (Kubeconfig) under KubeconfigKey, then the
// kubernetes-cluster Target name whose kubeconfig is that Secret's. It
// blocks on the two creates and fails the test on an error of either.
func (c *Cluster) CreateTarget(ctx context.Context, cl client.Interface, ns, name, secret string) {
	c.t.Helper()
	sec := &api.Secret{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: secret},
		Data: map[string][]byte{KubeconfigKey: c.Kubeconfig()}}
	if _, err := client.For[*api.Secret](cl).Create(ctx, sec); err != nil {
		c.t.Fatalf("kubetest: create the kubeconfig Secret %s/%s: %v", ns, secret, err)
	}
	cfg, err := json.Marshal(map[string]any{"kubeconfig": map[string]any{
		"secretRef": map[string]string{"name": secret, "key": KubeconfigKey}}})
	if err != nil {
		panic(fmt.Sprintf("kubetest: encode a Target config: %v", err))
	}
	tg := &api.Target{ObjectMeta: api.ObjectMeta{Namespace: ns, Name: name},
		Spec: api.TargetSpec{Type: api.TargetTypeKubernetesCluster, Config: cfg}}
	if _, err := client.For[*api.Target](cl).Create(ctx, tg); err != nil {
		c.t.Fatalf("kubetest: create the Target %s/%s: %v", ns, name, err)
	}
}
