package kube_test

import (
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/deployer"
	"cairn.dev/cairn/deployer/kube"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/manager"
	cairntarget "cairn.dev/cairn/target"
)

// deadKubeconfig is a usable kubeconfig of a cluster nobody serves: For
// builds its client without contacting it.
const deadKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

func TestClusters_ADeletedTargetsClusterAndClientAreForgotten(t *testing.T) {
	clients := cairntarget.NewClients()
	built := make(chan *kube.Clusters, 1)
	e := deploytest.Start(t, deploytest.Options{}, manager.Controller{Name: "forget-deleted-targets",
		Setup: func(tm *manager.Term) error {
			cs := kube.NewClusters(tm.Client, kube.Options{Clients: clients})
			cs.ForgetDeleted(tm)
			built <- cs
			return nil
		}})
	var cs *kube.Clusters
	select {
	case cs = <-built:
	case <-time.After(deploytest.Wait):
		t.Fatal("the controller was not set up")
	}
	e.Create(testkit.Secret(deploytest.NS, "kc", map[string]string{"kubeconfig": deadKubeconfig}))
	tg := target(e, "kc", "kubeconfig")
	item := &deployer.Item{DeployItem: &api.DeployItem{ObjectMeta: api.ObjectMeta{Name: "a", Namespace: deploytest.NS}}, Target: tg}
	if _, err := cs.For(e.Ctx(), item); err != nil {
		t.Fatal(err)
	}
	if cs.Len() != 1 || clients.Len() != 1 {
		t.Fatalf("after For: %d clusters, %d clients cached, want 1 and 1", cs.Len(), clients.Len())
	}
	e.Delete(api.KindTarget, "cluster")
	testkit.Eventually(t, deploytest.Wait, "the deleted Target's cluster and client forgotten", func() bool {
		return cs.Len() == 0 && clients.Len() == 0
	})
}
