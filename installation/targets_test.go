package installation_test

import (
	"encoding/json"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/deploytest"
)

// The target exports of installations, with the real execution controller
// and mock deployer: published as Targets in the exporter's context,
// imported by siblings, re-triggering them, and deleted with the exporter.

// target reads a Target, failing the test when it does not exist.
func target(t *testing.T, e *deploytest.Env, name string) *api.Target {
	t.Helper()
	tg, ok := deploytest.Get[*api.Target](e, api.KindTarget, name)
	if !ok {
		t.Fatalf("Target %s does not exist", name)
	}
	return tg
}

func itemTarget(t *testing.T, e *deploytest.Env, item string) string {
	t.Helper()
	d, ok := deploytest.Get[api.DeployItem](e, api.KindDeployItem, item)
	if !ok {
		t.Fatalf("deploy item %s does not exist", item)
	}
	return d.Spec.Target
}

func TestTargetExport_RootInstallationPublishesATargetInItsNamespace(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, `kind: Installation
metadata: {name: cluster}
spec:
  imports: {data: [{name: region, value: eu-1}]}
  exports: {targets: [{name: kube, target: prod}]}
  blueprint:
    inline:
      imports: [{name: region}]
      exports: [{name: kube, type: target}]
      deployExecutions:
      - name: items
        template: "deployItems: [{name: create, type: mock, config: {export: {endpoint: 'https://eu-1.example'}}}]"
      exportExecutions:
      - name: out
        template: |
          exports:
            kube:
              type: kubernetes
              config: {endpoint: {{ .deployItems.create.exports.endpoint | quote }}, region: {{ .imports.region | quote }}}`)
	in := waitInstPhase(t, e, "cluster", api.InstallationSucceeded)
	tg := target(t, e, "prod")
	if tg.Spec.Type != "kubernetes" || string(tg.Spec.Config) != `{"endpoint":"https://eu-1.example","region":"eu-1"}` {
		t.Fatalf("Target spec %+v (config %s)", tg.Spec, tg.Spec.Config)
	}
	if ref := tg.ControllerRef(); ref == nil || ref.Name != "cluster" || ref.UID != in.UID {
		t.Fatalf("Target owner %+v, want installation cluster", tg.OwnerReferences)
	}
	if tg.Labels[api.LabelInstallation] != "cluster" || tg.Labels[api.LabelTargetRef] != "prod" || tg.Labels[api.LabelContext] != "" {
		t.Fatalf("Target labels %v", tg.Labels)
	}
	if in.Status.ConfigGeneration == "" {
		t.Fatalf("no configGeneration after publishing a target: %s", statusString(in))
	}
	e.WaitExplain(api.KindInstallation, "cluster", "5. exports published as [target/prod]")
}

// envYAML nests an infrastructure installation that exports a target and
// an app that imports it (and deploys to it) in one parent.
const envYAML = `kind: Blueprint
metadata: {name: infra}
spec:
  exports: [{name: kube, type: target}]
  deployExecutions:
  - name: items
    template: "deployItems: [{name: create, type: mock, config: {delay: 300ms, export: {endpoint: 'https://k.example'}}}]"
  exportExecutions:
  - name: out
    template: |
      exports:
        kube: {type: kubernetes, config: {endpoint: {{ .deployItems.create.exports.endpoint | quote }}}}
---
kind: Blueprint
metadata: {name: app}
spec:
  imports: [{name: kube, type: target}]
  deployExecutions:
  - name: items
    template: |
      deployItems:
      - name: web
        type: mock
        target: {{ .imports.kube.name }}
        config: {endpoint: {{ .imports.kube.config.endpoint | quote }}}
---
kind: Installation
metadata: {name: env}
spec:
  blueprint:
    inline:
      subinstallations:
      - name: infra
        blueprint: {ref: infra}
        exports: {targets: [{name: kube, target: cluster}]}
      - name: app
        blueprint: {ref: app}
        imports: {targets: [{name: kube, target: cluster}]}`

func TestTargetExport_NestedExportLandsInTheParentsContextAndTheImportingSiblingWaitsThenDeploysToIt(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, envYAML)
	e.WaitExplain(api.KindInstallation, "env-app", "PendingDependencies: import kube waits for sibling env-infra")
	waitInstPhase(t, e, "env", api.InstallationSucceeded)
	tg := target(t, e, "env-cluster")
	if tg.Labels[api.LabelContext] != "env" || tg.Labels[api.LabelTargetRef] != "cluster" || tg.ControllerRef().Name != "env-infra" {
		t.Fatalf("Target %s: labels %v, owners %+v", tg.Name, tg.Labels, tg.OwnerReferences)
	}
	if _, ok := deploytest.Get[*api.Target](e, api.KindTarget, "cluster"); ok {
		t.Fatal("a nested installation's target export landed in the namespace's root context")
	}
	// The app rendered its item against the Target (the mock deployer
	// read it: an item whose target is missing fails).
	if got := itemTarget(t, e, "env-app-web"); got != "env-cluster" {
		t.Fatalf("the app's deploy item targets %q, want env-cluster", got)
	}
	if x := e.GetExecution("env-app"); x.Status.Phase != api.DeploySucceeded ||
		!strings.Contains(string(x.Spec.DeployItems[0].Config), "https://k.example") {
		t.Fatalf("the app's execution: %s %s", x.Status.Phase, x.Spec.DeployItems[0].Config)
	}
	app := waitInstPhase(t, e, "env-app", api.InstallationSucceeded)
	if g := app.Status.ImportGenerations; len(g) != 1 || g[0].Source != "target/env-cluster" || !strings.HasPrefix(g[0].Generation, "config/") {
		t.Fatalf("the app's import generations %+v: want the exporter's configGeneration", g)
	}
}

// pairTargetYAML is two root installations: producer exports a target
// made from its import, consumer imports it.
const pairTargetYAML = `kind: Installation
metadata: {name: producer}
spec:
  imports: {data: [{name: endpoint, value: "https://v1.example"}]}
  exports: {targets: [{name: out, target: shared}]}
  blueprint:
    inline:
      imports: [{name: endpoint}]
      exports: [{name: out, type: target}]
      deployExecutions:
      - name: items
        template: "deployItems: [{name: p, type: mock}]"
      exportExecutions:
      - name: out
        template: "exports: {out: {type: http, config: {url: {{ .imports.endpoint | quote }}}}}"
---
kind: Installation
metadata: {name: consumer}
spec:
  imports: {targets: [{name: in, target: shared}]}
  blueprint:
    inline:
      imports: [{name: in, type: target}]
      deployExecutions:
      - name: items
        template: "deployItems: [{name: c, type: mock, target: {{ .imports.in.name }}, config: {url: {{ .imports.in.config.url | quote }}}}]"`

// consumerURL is the url the consumer's deploy item was rendered with.
func consumerURL(e *deploytest.Env) string {
	x, ok := deploytest.Get[api.Execution](e, api.KindExecution, "consumer")
	if !ok || len(x.Spec.DeployItems) == 0 {
		return ""
	}
	var cfg struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(x.Spec.DeployItems[0].Config, &cfg)
	return cfg.URL
}

func TestTargetExport_ChangeRetriggersTheImportingSibling(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, pairTargetYAML)
	waitInstPhase(t, e, "consumer", api.InstallationSucceeded)
	if got := consumerURL(e); got != "https://v1.example" {
		t.Fatalf("consumer rendered %q", got)
	}
	e.Patch(api.KindInstallation, "producer", `{"spec":{"imports":{"data":[{"name":"endpoint","value":"https://v2.example"}]}}}`)
	testkit.EventuallyNil(t, deploytest.Wait, "the consumer re-rendered with the new target", func() error {
		if got := consumerURL(e); got != "https://v2.example" {
			return errString("consumer renders " + got)
		}
		return nil
	})
	if got := string(target(t, e, "shared").Spec.Config); got != `{"url":"https://v2.example"}` {
		t.Fatalf("Target config %s", got)
	}
	waitInstPhase(t, e, "consumer", api.InstallationSucceeded)
	e.WaitExplain(api.KindInstallation, "producer", "triggered dependent consumer")
}

func TestTargetImport_HandMadeTargetChangeReRendersTheImporter(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, `kind: Target
metadata: {name: shared}
spec: {type: http, config: {url: "https://by-hand.example"}}
---
`+pairTargetYAML[strings.Index(pairTargetYAML, "kind: Installation\nmetadata: {name: consumer}"):])
	waitInstPhase(t, e, "consumer", api.InstallationSucceeded)
	if got := consumerURL(e); got != "https://by-hand.example" {
		t.Fatalf("consumer rendered %q", got)
	}
	e.Patch(api.KindTarget, "shared", `{"spec":{"config":{"url":"https://edited.example"}}}`)
	testkit.EventuallyNil(t, deploytest.Wait, "the consumer re-rendered with the edited target", func() error {
		if got := consumerURL(e); got != "https://edited.example" {
			return errString("consumer renders " + got)
		}
		return nil
	})
	waitInstPhase(t, e, "consumer", api.InstallationSucceeded)
	e.WaitExplain(api.KindInstallation, "consumer", "5. import in changed (target/shared): reconcile annotation added")
}

func TestTargetExport_DeletionWaitsForTheImportingSiblingAndTheTargetGoesWithTheExporter(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, pairTargetYAML)
	waitInstPhase(t, e, "consumer", api.InstallationSucceeded)
	e.Delete(api.KindInstallation, "producer")
	testkit.EventuallyNil(t, deploytest.Wait, "the producer's deletion blocked by the consumer", func() error {
		p, ok := deploytest.Get[*api.Installation](e, api.KindInstallation, "producer")
		if !ok {
			return errString("producer gone while the consumer imports its target")
		}
		if le := p.Status.LastError; le == nil || le.Reason != "DeletionBlocked" || !strings.Contains(le.Message, "sibling consumer imports target shared") {
			return errString("not blocked: " + statusString(p))
		}
		return nil
	})
	target(t, e, "shared") // still there while imported
	if x := e.GetExecution("producer"); x.Deleting() {
		t.Fatal("the producer's execution is deleted while its deletion is blocked")
	}
	e.Delete(api.KindInstallation, "consumer")
	e.WaitGone(api.KindInstallation, "consumer")
	e.WaitGone(api.KindInstallation, "producer")
	e.WaitGone(api.KindTarget, "shared")
}

func TestTargetExport_ValueThatIsNoTargetFailsNamingTheExport(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, `kind: Installation
metadata: {name: bad}
spec:
  exports: {targets: [{name: kube, target: prod}]}
  blueprint:
    inline:
      exports: [{name: kube, type: target}]
      exportExecutions:
      - name: out
        template: "exports: {kube: just-a-string}"`)
	in := waitInstPhase(t, e, "bad", api.InstallationFailed)
	if le := in.Status.LastError; le == nil || le.Reason != "RenderFailed" || !strings.Contains(le.Message, `export "kube" is published as a Target`) {
		t.Fatalf("lastError %+v", in.Status.LastError)
	}
	if _, ok := deploytest.Get[*api.Target](e, api.KindTarget, "prod"); ok {
		t.Fatal("a Target was published from a value that is none")
	}
}

func TestTargetImport_NestedInstallationImportsItsParentsTarget(t *testing.T) {
	e := startAll(t)
	applyAll(t, e, `kind: Target
metadata: {name: prod}
spec: {type: ssh, config: {host: prod.example}}
---
kind: Installation
metadata: {name: site}
spec:
  imports: {targets: [{name: cluster, target: prod}]}
  blueprint:
    inline:
      imports: [{name: cluster, type: target}]
      subinstallations:
      - name: web
        blueprint:
          inline:
            imports: [{name: k, type: target}]
            deployExecutions:
            - name: items
              template: "deployItems: [{name: a, type: mock, target: {{ .imports.k.name }}, config: {host: {{ .imports.k.config.host }}}}]"
        imports: {targets: [{name: k, target: cluster}]}`)
	waitInstPhase(t, e, "site", api.InstallationSucceeded)
	if got := itemTarget(t, e, "site-web-a"); got != "prod" {
		t.Fatalf("the nested installation's item targets %q, want its parent's target prod", got)
	}
	web := waitInstPhase(t, e, "site-web", api.InstallationSucceeded)
	if g := web.Status.ImportGenerations; len(g) != 1 || g[0].Source != "parent/site:cluster" {
		t.Fatalf("import generations %+v: want the parent's import", g)
	}
}
