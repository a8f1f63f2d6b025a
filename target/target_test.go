package target_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/internal/testkit/kubetest"
	"cairn.dev/cairn/manager"
	"cairn.dev/cairn/target"
)

// env is a cairn server with the target controller running, its log
// captured.
type env struct {
	*deploytest.Env
	clients *target.Clients
	log     *testkit.Buffer
}

// start runs a server and the target controller with opts (its clients
// cache shared with the test), logging at debug level into env.log.
func start(t *testing.T, opts target.Options) *env {
	e := &env{Env: deploytest.Start(t, deploytest.Options{}), clients: target.NewClients(), log: &testkit.Buffer{}}
	opts.Clients = e.clients
	logger := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := manager.New(manager.Options{Client: e.C, Logger: logger, Traces: e.Traces,
		Controllers: []manager.Controller{{Name: "target", Setup: func(tm *manager.Term) error { return target.Setup(tm, opts) }}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return e
}

// secret creates or replaces the Secret name holding data.
func (e *env) secret(name string, data map[string]string) {
	e.T.Helper()
	obj := testkit.Secret(deploytest.NS, name, data)
	if cur, err := e.C.Get(e.Ctx(), api.KindSecret, deploytest.NS, name); err == nil {
		obj.ResourceVersion = cur.ResourceVersion
		if _, err := e.C.Update(e.Ctx(), obj); err != nil {
			e.T.Fatalf("update secret %s: %v", name, err)
		}
		return
	}
	e.Create(obj)
}

// target creates a kubernetes-cluster Target whose kubeconfig is key of
// Secret secret.
func (e *env) target(name, secret, key string) {
	e.T.Helper()
	e.Create(testkit.Object(api.KindTarget, deploytest.NS, name, testkit.Spec(fmt.Sprintf(
		`{"type":"kubernetes-cluster","config":{"kubeconfig":{"secretRef":{"name":%q,"key":%q}}}}`, secret, key))))
}

// wait waits until Target name's Reachable condition has status and a
// reason and message containing want, and returns the Target.
func (e *env) wait(name string, status api.ConditionStatus, want ...string) api.Target {
	e.T.Helper()
	var tg api.Target
	testkit.EventuallyNil(e.T, deploytest.Wait, fmt.Sprintf("target %s Reachable=%s %v", name, status, want), func() error {
		var ok bool
		tg, ok = deploytest.Get[api.Target](e.Env, api.KindTarget, name)
		if !ok {
			return fmt.Errorf("no target %s", name)
		}
		c := api.FindCondition(tg.Status.Conditions, api.ConditionReachable)
		if c == nil || c.Status != status {
			return fmt.Errorf("status %+v", tg.Status)
		}
		for _, w := range want {
			if !strings.Contains(c.Reason+": "+c.Message, w) {
				return fmt.Errorf("condition %+v does not say %q", c, w)
			}
		}
		return nil
	})
	return tg
}

// noLeak fails the test when s appears in any status, trace or log line.
func (e *env) noLeak(s string, targets ...string) {
	e.T.Helper()
	for _, name := range targets {
		obj, err := e.C.Get(e.Ctx(), api.KindTarget, deploytest.NS, name)
		if err != nil {
			e.T.Fatal(err)
		}
		raw, _ := json.Marshal(obj)
		if strings.Contains(string(raw), s) {
			e.T.Errorf("target %s shows the kubeconfig's token: %s", name, raw)
		}
		if tr := e.Explain(api.KindTarget, name); strings.Contains(tr, s) || tr == "" {
			e.T.Errorf("trace of target %s is empty or shows the kubeconfig's token:\n%s", name, tr)
		}
	}
	if strings.Contains(e.log.String(), s) {
		e.T.Errorf("the log shows the kubeconfig's token:\n%s", e.log.String())
	}
}

// tokenFirst is k's admin kubeconfig with the user, and so the token,
// first: a trace step that quoted the kubeconfig would show it before
// the trace's bound on a step's length cuts the message.
func tokenFirst(k *kubetest.Cluster) string {
	return fmt.Sprintf(`users: [{name: admin, user: {token: %s}}]
apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: admin}}]
clusters: [{name: k, cluster: {server: %q, certificate-authority-data: %s}}]
`, k.Token, k.URL, base64.StdEncoding.EncodeToString(k.CAData))
}

func TestTarget_ReachableWithTheServerVersionAndTheKubeconfigNowhere(t *testing.T) {
	k := kubetest.Start(t)
	e := start(t, target.Options{})
	e.secret("prod", map[string]string{"kubeconfig": tokenFirst(k)})
	e.target("prod", "prod", "kubeconfig")

	tg := e.wait("prod", api.ConditionTrue, target.ReasonConnected)
	want, _ := kubetest.Version()
	if tg.Status.ServerVersion != want || tg.Status.ObservedGeneration != tg.Generation {
		t.Errorf("status = %+v, want serverVersion %s for generation %d", tg.Status, want, tg.Generation)
	}
	if cl, ok := e.clients.Lookup(deploytest.NS + "/prod"); !ok || cl.Config.Host != k.URL {
		t.Errorf("cached client found %v, want one for %s", ok, k.URL)
	}
	e.noLeak(k.Token, "prod")

	// Deleting the Target drops its client.
	e.Delete(api.KindTarget, "prod")
	testkit.Eventually(t, deploytest.Wait, "the client of the deleted target dropped", func() bool { return e.clients.Len() == 0 })
}

func TestTarget_MissingSecretOrKeyOrABadKubeconfigIsUnreachableNamingIt(t *testing.T) {
	// An hour between periodic checks: every change below is noticed
	// because the Target's Secret changed.
	e := start(t, target.Options{Interval: time.Hour})
	const token = "TOKEN-not-for-any-eyes-31337"
	e.target("t", "creds", "config")
	e.wait("t", api.ConditionFalse, target.ReasonSecretNotFound, "Secret creds")

	e.secret("creds", map[string]string{"other": "x"})
	e.wait("t", api.ConditionFalse, target.ReasonKeyNotFound, "no key config", "its keys: other")

	e.secret("creds", map[string]string{"config": "users: [{name: u, user: {token: " + token + "}}\n  bad: ["})
	e.wait("t", api.ConditionFalse, target.ReasonInvalidKubeconfig, "Secret creds key config", "does not parse")

	exec := `apiVersion: v1
kind: Config
current-context: c
contexts: [{name: c, context: {cluster: k, user: u}}]
clusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/echo, args: [` + token + `]}}}]
`
	e.secret("creds", map[string]string{"config": exec})
	e.wait("t", api.ConditionFalse, target.ReasonKubeconfigRefused, "users[u].exec")

	e.secret("creds", map[string]string{"config": strings.Replace(strings.Replace(exec,
		"{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/echo, args: ["+token+"]}}", "{token: "+token+"}", 1),
		"https://127.0.0.1:1", "https://127.0.0.1:9", 1)})
	e.wait("t", api.ConditionFalse, target.ReasonUnreachable, "127.0.0.1:9")
	if e.clients.Len() != 1 {
		t.Errorf("cached clients = %d, want the one of the unreachable target", e.clients.Len())
	}
	e.noLeak(token, "t")
}

func TestTarget_APIServerStoppedIsUnreachableAndStartedAgainReachable(t *testing.T) {
	k := kubetest.Start(t)
	e := start(t, target.Options{Interval: 200 * time.Millisecond, ProbeTimeout: 2 * time.Second})
	k.CreateTarget(e.Ctx(), e.C, deploytest.NS, "prod", "prod")
	up := e.wait("prod", api.ConditionTrue)

	k.Stop()
	down := e.wait("prod", api.ConditionFalse, target.ReasonUnreachable, "the cluster did not answer")
	if down.Status.ServerVersion != "" {
		t.Errorf("serverVersion of an unreachable cluster = %q, want none", down.Status.ServerVersion)
	}
	k.Restart()
	again := e.wait("prod", api.ConditionTrue, target.ReasonConnected)
	c0 := api.FindCondition(up.Status.Conditions, api.ConditionReachable)
	c1 := api.FindCondition(again.Status.Conditions, api.ConditionReachable)
	if !c1.LastTransitionTime.After(c0.LastTransitionTime) && !c1.LastTransitionTime.Equal(c0.LastTransitionTime) {
		t.Errorf("lastTransitionTime went back: %s then %s", c0.LastTransitionTime, c1.LastTransitionTime)
	}
	e.noLeak(k.Token, "prod")
}

func TestTarget_SecretChangedToAnotherClusterDropsTheCachedClient(t *testing.T) {
	a, b := kubetest.Start(t), kubetest.Start(t)
	e := start(t, target.Options{Interval: 200 * time.Millisecond, ProbeTimeout: 2 * time.Second})
	a.CreateTarget(e.Ctx(), e.C, deploytest.NS, "prod", "prod")
	e.wait("prod", api.ConditionTrue)
	first, ok := e.clients.Lookup(deploytest.NS + "/prod")
	if !ok || first.Config.Host != a.URL {
		t.Fatalf("cached client = %v (found %v), want one for %s", first != nil, ok, a.URL)
	}

	e.secret("prod", map[string]string{"kubeconfig": string(b.Kubeconfig())})
	sec, err := e.C.Get(e.Ctx(), api.KindSecret, deploytest.NS, "prod")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, deploytest.Wait, "a client for the second cluster", func() error {
		cl, ok := e.clients.Lookup(deploytest.NS + "/prod")
		if !ok {
			return fmt.Errorf("no cached client")
		}
		if cl.Config.Host != b.URL || cl.SecretResourceVersion != sec.ResourceVersion {
			return fmt.Errorf("cached client for %s from Secret version %s, want %s and %s", cl.Config.Host, cl.SecretResourceVersion, b.URL, sec.ResourceVersion)
		}
		return nil
	})
	// The first cluster going away no longer matters: the Target stays
	// reachable through the second, for a dozen checks at least.
	a.Stop()
	checks := func() int { return strings.Count(e.Explain(api.KindTarget, "prod"), "server version: ") }
	before := checks()
	testkit.EventuallyNil(t, deploytest.Wait, "a dozen checks after the first cluster stopped", func() error {
		if n := checks() - before; n < 12 {
			return fmt.Errorf("%d checks", n)
		}
		return nil
	})
	e.wait("prod", api.ConditionTrue)
	if e.clients.Len() != 1 {
		t.Errorf("cached clients = %d, want 1", e.clients.Len())
	}
	e.noLeak(a.Token, "prod")
	e.noLeak(b.Token, "prod")
}
