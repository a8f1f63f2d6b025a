package kube_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/deployer/kube"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/internal/testkit/kubetest"
)

// target creates the Target cluster reading key of Secret secret.
func target(e *deploytest.Env, secret, key string) *api.Target {
	out := e.Create(testkit.Object(api.KindTarget, deploytest.NS, "cluster", testkit.Spec(fmt.Sprintf(
		`{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":%q,"key":%q}}}}`, secret, key))))
	var t api.Target
	if err := out.Into(&t); err != nil {
		e.T.Fatal(err)
	}
	return &t
}

func TestClusters_ForReadsTheTargetsSecretAndFollowsItsVersion(t *testing.T) {
	kc := kubetest.Start(t)
	e := deploytest.Start(t, deploytest.Options{})
	cs := kube.NewClusters(e.C, kube.Options{})
	tg := target(e, "kc", "kubeconfig")
	item := func(string, string) *deployer.Item {
		return &deployer.Item{DeployItem: &api.DeployItem{ObjectMeta: api.ObjectMeta{Name: "a", Namespace: deploytest.NS}}, Target: tg}
	}

	_, err := cs.For(e.Ctx(), item("kc", "kubeconfig"))
	if !errors.Is(err, kube.ErrTarget) || !strings.Contains(err.Error(), "Secret kc") {
		t.Fatalf("missing Secret: %v, want ErrTarget naming Secret kc", err)
	}
	e.Create(testkit.Secret(deploytest.NS, "kc", map[string]string{"other": "x"}))
	_, err = cs.For(e.Ctx(), item("kc", "kubeconfig"))
	if !errors.Is(err, kube.ErrTarget) || !strings.Contains(err.Error(), "no key kubeconfig") {
		t.Fatalf("missing key: %v, want ErrTarget naming the key", err)
	}

	obj, err := e.C.Get(e.Ctx(), api.KindSecret, deploytest.NS, "kc")
	if err != nil {
		t.Fatal(err)
	}
	sec := testkit.Secret(deploytest.NS, "kc", map[string]string{"kubeconfig": string(kc.Kubeconfig())})
	sec.ResourceVersion = obj.ResourceVersion
	if _, err := e.C.Update(e.Ctx(), sec); err != nil {
		t.Fatal(err)
	}
	c1, err := cs.For(e.Ctx(), item("kc", "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := c1.Get(e.Ctx(), kube.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "default"})
	if err != nil || ns.GetName() != "default" {
		t.Fatalf("get namespace default: %v", err)
	}
	if c2, err := cs.For(e.Ctx(), item("kc", "kubeconfig")); err != nil || c2 != c1 {
		t.Fatalf("same Secret version: got another cluster (%v)", err)
	}

	obj, err = e.C.Get(e.Ctx(), api.KindSecret, deploytest.NS, "kc")
	if err != nil {
		t.Fatal(err)
	}
	sec = testkit.Secret(deploytest.NS, "kc", map[string]string{"kubeconfig": string(kc.Kubeconfig()), "more": "y"})
	sec.ResourceVersion = obj.ResourceVersion
	if _, err := e.C.Update(e.Ctx(), sec); err != nil {
		t.Fatal(err)
	}
	if c3, err := cs.For(e.Ctx(), item("kc", "kubeconfig")); err != nil || c3 == c1 {
		t.Fatalf("new Secret version: the cached cluster was kept (%v)", err)
	}
}
