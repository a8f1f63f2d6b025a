package installation_test

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/deployer/mock"
	"cairn.dev/cairn/execution"
	"cairn.dev/cairn/installation"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
	"cairn.dev/cairn/manager"
)

// startAll runs the installation and execution controllers and the mock
// deployer (with the garbage collector) against a real server.
func startAll(t *testing.T) *deploytest.Env {
	return deploytest.Start(t, deploytest.Options{},
		manager.Controller{Name: "installation", Setup: func(tm *manager.Term) error {
			return installation.Setup(tm, installation.Options{Workers: 4})
		}},
		manager.Controller{Name: "execution", Setup: func(tm *manager.Term) error { return execution.Setup(tm, execution.Options{}) }},
		manager.Controller{Name: "deployer-mock", Setup: mock.Setup},
	)
}

func applyAll(t *testing.T, e *deploytest.Env, docs string) {
	t.Helper()
	for _, doc := range strings.Split(docs, "\n---\n") {
		var obj api.Object
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		obj.APIVersion, obj.Namespace = api.APIVersion, deploytest.NS
		e.Create(&obj)
	}
}

func waitInstPhase(t *testing.T, e *deploytest.Env, name string, phase api.InstallationPhase) *api.Installation {
	t.Helper()
	var in *api.Installation
	testkit.EventuallyNil(t, deploytest.Wait, "installation "+name+" "+string(phase), func() error {
		var err error
		in, err = client.For[*api.Installation](e.C).Get(context.Background(), deploytest.NS, name)
		if err != nil {
			return err
		}
		if in.Status.Phase != phase {
			return errString("phase " + string(in.Status.Phase) + " " + statusString(in))
		}
		return nil
	})
	return in
}

// mockTreeYAML is the shop tree with mock deploy items: the database
// exports its connection through its item's export, the app imports it.
const mockTreeYAML = `kind: Blueprint
metadata: {name: database}
spec:
  exports: [{name: connection, schema: {type: object, required: [host, port]}}]
  deployExecutions:
  - name: items
    template: |
      deployItems:
      - name: db
        type: mock
        config: {phase: Succeeded, delay: 200ms, export: {host: 127.0.0.1, port: 5432}}
  exportExecutions:
  - name: out
    template: |
      exports:
        connection: {{ .deployItems.db.exports | toJson }}
---
kind: Blueprint
metadata: {name: app}
spec:
  imports: [{name: db, schema: {type: object, required: [host, port]}}]
  deployExecutions:
  - name: items
    template: |
      deployItems:
      - name: web
        type: mock
        config: {phase: Succeeded, export: {url: "http://{{ .imports.db.host }}:{{ .imports.db.port }}"}}
      - name: check
        type: mock
        dependsOn: [web]
        config: {phase: Succeeded}
---
kind: Installation
metadata: {name: shop}
spec:
  blueprint:
    inline:
      subinstallations:
      - name: database
        blueprint: {ref: database}
        exports: {data: [{name: connection, dataRef: db-connection}]}
      - name: app
        blueprint: {ref: app}
        imports: {data: [{name: db, dataRef: db-connection}]}`

func TestInstallationEndToEnd_MockTreeConvergesAndDeletes(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, mockTreeYAML)
	waitInstPhase(t, e, "shop", api.InstallationSucceeded)
	app := e.GetExecution("shop-app")
	if app.Status.Phase != api.DeploySucceeded || !strings.Contains(string(app.Spec.DeployItems[0].Config), "http://127.0.0.1:5432") {
		t.Fatalf("app execution %+v", app)
	}
	for _, n := range []string{"shop-database", "shop-app"} {
		waitInstPhase(t, e, n, api.InstallationSucceeded)
	}
	e.Delete(api.KindInstallation, "shop")
	for _, n := range []string{"shop", "shop-app", "shop-database"} {
		e.WaitGone(api.KindInstallation, n)
	}
	e.WaitGone(api.KindExecution, "shop-database")
	e.WaitGone(api.KindDataObject, "shop-db-connection")
}

func TestInstallationEndToEnd_FailedDeployItemFailsTheInstallationNamingIt(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, `kind: Installation
metadata: {name: broken}
spec:
  automaticReconcile: {failedReconcile: {maxRetries: 1, interval: 1s}}
  blueprint:
    inline:
      deployExecutions:
      - name: items
        template: "deployItems: [{name: boom, type: mock, config: {phase: Failed}}]"`)
	in := waitInstPhase(t, e, "broken", api.InstallationFailed)
	if in.Status.LastError == nil || !strings.Contains(in.Status.LastError.Message, "execution broken is Failed: deploy item boom failed") {
		t.Fatalf("lastError %+v", in.Status.LastError)
	}
	testkit.EventuallyNil(t, deploytest.Wait, "one automatic retry, then Failed again", func() error {
		in, err := client.For[*api.Installation](e.C).Get(context.Background(), deploytest.NS, "broken")
		if err != nil {
			return err
		}
		if in.Status.AutomaticReconcile == nil || in.Status.AutomaticReconcile.FailedRetries != 1 || in.Status.Phase != api.InstallationFailed ||
			in.Annotations[api.AnnotationOperation] != "" {
			return errString(statusString(in))
		}
		return nil
	})
}

func TestInstallationEndToEnd_SucceededReconcileRunsPeriodically(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, `kind: Installation
metadata: {name: steady}
spec:
  automaticReconcile: {succeededReconcile: {interval: 1s}}
  blueprint:
    inline:
      deployExecutions:
      - name: items
        template: "deployItems: [{name: a, type: mock, config: {phase: Succeeded}}]"`)
	waitInstPhase(t, e, "steady", api.InstallationSucceeded)
	var seen []string
	testkit.EventuallyNil(t, deploytest.Wait, "two periodic reconciles", func() error {
		in, err := client.For[*api.Installation](e.C).Get(context.Background(), deploytest.NS, "steady")
		if err != nil {
			return err
		}
		if st := in.Status.AutomaticReconcile; st != nil && !st.LastRetry.IsZero() {
			if s := st.LastRetry.String(); len(seen) == 0 || seen[len(seen)-1] != s {
				seen = append(seen, s)
			}
		}
		if len(seen) < 2 {
			return errString("periodic reconciles seen: " + strings.Join(seen, ", "))
		}
		return nil
	})
	waitInstPhase(t, e, "steady", api.InstallationSucceeded)
	e.WaitExplain(api.KindInstallation, "steady", "automaticReconcile: reconcile annotation added (periodic)")
}
