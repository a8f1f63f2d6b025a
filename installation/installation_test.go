package installation_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

// rootYAML is a root installation with a value import, one deploy item and
// an export rendered from the item's exports.
const rootYAML = `apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: root}
spec:
  imports:
    data:
    - {name: size, value: 3}
  exports:
    data:
    - {name: address, dataRef: root-address}
  blueprint:
    inline:
      imports:
      - {name: size, schema: {type: integer, minimum: 1}}
      exports:
      - {name: address, schema: {type: string}}
      deployExecutions:
      - name: items
        template: |
          deployItems:
          - name: server
            type: mock
            config: {replicas: {{ .imports.size }}}
      exportExecutions:
      - name: out
        template: |
          exports:
            address: {{ .deployItems.server.exports.host | quote }}
`

func TestInstallation_RootRendersItsExecutionAndPublishesItsExports(t *testing.T) {
	e := start(t)
	e.apply(rootYAML)
	in := e.waitInst("root", "finalizer and Progressing", func(in *api.Installation) string {
		if !in.HasFinalizer(api.FinalizerInstallation) || in.Status.Phase != api.InstallationProgressing {
			return "not yet"
		}
		return ""
	})
	if in.Status.ExecutionRef != "root" || in.Status.ObservedGeneration != in.Generation {
		t.Fatalf("status %s", statusString(in))
	}
	ex, err := e.exec("root")
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Spec.DeployItems) != 1 || string(ex.Spec.DeployItems[0].Config) != `{"replicas":3}` || ex.ControllerRef().Name != "root" {
		t.Fatalf("execution %+v", ex)
	}
	e.finish("root", 0, api.DeploySucceeded, map[string]any{"server": map[string]any{"host": "10.0.0.1"}})
	in = e.waitPhase("root", api.InstallationSucceeded)
	if in.Status.ConfigGeneration == "" {
		t.Fatalf("no configGeneration: %s", statusString(in))
	}
	do, err := client.For[*api.DataObject](e.c).Get(e.ctx, e.ns, "root-address")
	if err != nil {
		t.Fatal(err)
	}
	if string(do.Data) != `"10.0.0.1"` || do.ControllerRef().Name != "root" || do.Labels[api.LabelDataRef] != "root-address" {
		t.Fatalf("export %s %+v", do.Data, do.ObjectMeta)
	}
	e.waitExplain("root", "5. exports published")
}

// treeYAML is a root with two nested installations: app imports what
// database exports, so it waits for it.
const treeYAML = `apiVersion: cairn.dev/v1alpha1
kind: Blueprint
metadata: {name: database}
spec:
  exports: [{name: connection}]
  deployExecutions:
  - name: items
    template: |
      deployItems: [{name: db, type: mock}]
  exportExecutions:
  - name: out
    template: |
      exports:
        connection: {{ .deployItems.db.exports | toJson }}
---
apiVersion: cairn.dev/v1alpha1
kind: Blueprint
metadata: {name: app}
spec:
  imports: [{name: db, schema: {type: object, required: [host]}}]
  deployExecutions:
  - name: items
    template: |
      deployItems:
      - name: web
        type: mock
        config: {target: "{{ .imports.db.host }}:{{ .imports.db.port }}"}
---
apiVersion: cairn.dev/v1alpha1
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
        imports: {data: [{name: db, dataRef: db-connection}]}
`

func TestInstallation_SiblingImporterWaitsInPendingDependenciesThenRuns(t *testing.T) {
	e := start(t)
	e.apply(treeYAML)
	app := e.waitInst("shop-app", "PendingDependencies on the database", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationPendingDependencies || in.Status.LastError == nil ||
			!strings.Contains(in.Status.LastError.Message, "import db waits for sibling shop-database") {
			return "not waiting"
		}
		return ""
	})
	if app.ControllerRef().Name != "shop" {
		t.Fatalf("shop-app not owned by shop: %+v", app.OwnerReferences)
	}
	if _, err := e.exec("shop-app"); err == nil {
		t.Fatal("the app's execution exists while it waits for the database")
	}
	e.waitExplain("shop-app", "PendingDependencies: import db waits for sibling shop-database")
	e.waitPhase("shop", api.InstallationProgressing)
	e.finish("shop-database", 0, api.DeploySucceeded, map[string]any{"db": map[string]any{"host": "127.0.0.1", "port": 5432}})
	e.waitPhase("shop-database", api.InstallationSucceeded)
	do, err := client.For[*api.DataObject](e.c).Get(e.ctx, e.ns, "shop-db-connection")
	if err != nil {
		t.Fatalf("the database's export in the parent's context: %v", err)
	}
	if do.Labels[api.LabelContext] != "shop" {
		t.Fatalf("context label %v", do.Labels)
	}
	e.finish("shop-app", 0, api.DeploySucceeded, nil)
	ex, _ := e.exec("shop-app")
	if got := string(ex.Spec.DeployItems[0].Config); got != `{"target":"127.0.0.1:5432"}` {
		t.Fatalf("the app rendered %s from the database's export", got)
	}
	e.waitPhase("shop-app", api.InstallationSucceeded)
	shop := e.waitPhase("shop", api.InstallationSucceeded)
	if len(shop.Status.Subinstallations) != 2 || shop.Status.ExecutionRef != "" {
		t.Fatalf("shop status %s", statusString(shop))
	}

	// Deleting the root deletes the tree, the importer before the
	// exporter. The app's execution is held (as an uninstall under way
	// would hold it): meanwhile the database's deletion waits for its
	// importer (deletion step 2) and leaves its execution alone.
	e.hold("shop-app")
	w, err := e.c.Watch(e.ctx, api.KindInstallation, e.ns, api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.Events() {
			if ev.Type == api.Deleted {
				gone = append(gone, ev.Object.Name)
			}
		}
	}()
	e.deleteInst("shop")
	e.waitInst("shop-database", "deletion blocked by the app", func(in *api.Installation) string {
		if !in.Deleting() || in.Status.LastError == nil || in.Status.LastError.Reason != "DeletionBlocked" ||
			!strings.Contains(in.Status.LastError.Message, "sibling shop-app imports db-connection") {
			return "not blocked by the app"
		}
		return ""
	})
	e.waitPhase("shop-app", api.InstallationDeleting)
	if ex, err := e.exec("shop-database"); err != nil || ex.Deleting() {
		t.Fatalf("the exporter's execution is deleted while its importer remains: %v %v", err, ex)
	}
	e.release("shop-app")
	for _, n := range []string{"shop", "shop-app", "shop-database"} {
		e.waitGone(api.KindInstallation, n)
	}
	e.waitGone(api.KindDataObject, "shop-db-connection")
	e.waitGone(api.KindExecution, "shop-database")
	w.Stop()
	<-done
	if i, j := slices.Index(gone, "shop-app"), slices.Index(gone, "shop-database"); i < 0 || j < i {
		t.Fatalf("installations gone in the order %v: want the importer shop-app before the exporter shop-database", gone)
	}
}

// pairYAML is two root installations: producer exports what consumer
// imports.
const pairYAML = `apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: producer}
spec:
  imports: {data: [{name: version, value: "v1"}]}
  exports: {data: [{name: out, dataRef: shared}]}
  blueprint:
    inline:
      deployExecutions:
      - name: items
        template: "deployItems: [{name: p, type: mock}]"
      exportExecutions:
      - name: out
        template: "exports: {out: {{ .imports.version | quote }}}"
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: consumer}
spec:
  imports: {data: [{name: in, dataRef: shared}]}
  blueprint:
    inline:
      deployExecutions:
      - name: items
        template: "deployItems: [{name: c, type: mock, config: {version: {{ .imports.in | quote }}}}]"
`

func TestInstallation_ExportChangeRetriggersDependents(t *testing.T) {
	e := start(t)
	e.apply(pairYAML)
	e.waitInst("consumer", "waiting for producer", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationPendingDependencies {
			return "not waiting"
		}
		return ""
	})
	e.finish("producer", 0, api.DeploySucceeded, nil)
	e.waitPhase("producer", api.InstallationSucceeded)
	g1 := e.finish("consumer", 0, api.DeploySucceeded, nil)
	e.waitPhase("consumer", api.InstallationSucceeded)
	ex, _ := e.exec("consumer")
	if got := string(ex.Spec.DeployItems[0].Config); got != `{"version":"v1"}` {
		t.Fatalf("consumer rendered %s", got)
	}

	// A new version of the producer's import changes its export: the
	// consumer is triggered and renders the new value.
	if _, err := client.For[*api.Installation](e.c).Patch(e.ctx, e.ns, "producer",
		[]byte(`{"spec":{"imports":{"data":[{"name":"version","value":"v2"}]}}}`), false); err != nil {
		t.Fatal(err)
	}
	e.finish("producer", 0, api.DeploySucceeded, nil) // the execution spec did not change: only its status
	testkit.EventuallyNil(t, wait, "consumer re-rendered with v2", func() error {
		ex, err := e.exec("consumer")
		if err != nil {
			return err
		}
		if string(ex.Spec.DeployItems[0].Config) != `{"version":"v2"}` {
			return errString("config " + string(ex.Spec.DeployItems[0].Config))
		}
		return nil
	})
	e.finish("consumer", g1, api.DeploySucceeded, nil)
	e.waitInst("consumer", "Succeeded with the new import", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationSucceeded {
			return "phase"
		}
		for _, g := range in.Status.ImportGenerations {
			if g.Name == "in" && strings.HasPrefix(g.Generation, "config/") {
				return ""
			}
		}
		return "import generation"
	})
	e.waitExplain("producer", "triggered dependent consumer")
}

type errString string

func (e errString) Error() string { return string(e) }

func TestInstallation_DeletionBlockedWhileASiblingImportsAndReleasedWhenItIsGone(t *testing.T) {
	e := start(t)
	e.apply(pairYAML)
	e.finish("producer", 0, api.DeploySucceeded, nil)
	e.finish("consumer", 0, api.DeploySucceeded, nil)
	e.waitPhase("consumer", api.InstallationSucceeded)

	if _, _, err := e.c.Delete(e.ctx, api.KindInstallation, e.ns, "producer", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitInst("producer", "deletion blocked by the consumer", func(in *api.Installation) string {
		if in.Status.LastError == nil || in.Status.LastError.Reason != "DeletionBlocked" ||
			!strings.Contains(in.Status.LastError.Message, "sibling consumer imports shared") {
			return "not blocked"
		}
		return ""
	})
	if _, err := e.exec("producer"); err != nil {
		t.Fatalf("the producer's execution went while its deletion is blocked: %v", err)
	}
	e.waitExplain("producer", "2. deletion waits: sibling consumer imports shared")
	if _, _, err := e.c.Delete(e.ctx, api.KindInstallation, e.ns, "consumer", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(api.KindInstallation, "consumer")
	e.waitGone(api.KindInstallation, "producer")
	e.waitGone(api.KindExecution, "producer")
	e.waitGone(api.KindDataObject, "shared")
}

func TestInstallation_FailedInstallationIsRetriedByAutomaticReconcile(t *testing.T) {
	e := start(t)
	e.apply(`apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: flaky}
spec:
  automaticReconcile: {failedReconcile: {maxRetries: 2, interval: 1s}}
  blueprint:
    inline:
      deployExecutions:
      - name: items
        template: "deployItems: [{name: job, type: mock}]"
`)
	g := e.finish("flaky", 0, api.DeployFailed, nil)
	in := e.waitPhase("flaky", api.InstallationFailed)
	if in.Status.LastError == nil || !strings.Contains(in.Status.LastError.Message, "deploy item job failed: exit status 3") {
		t.Fatalf("lastError does not name the failed deploy item: %s", statusString(in))
	}
	// The retry asks the execution to run again (force-reconcile) and
	// counts itself.
	testkit.EventuallyNil(t, wait, "execution asked to run again", func() error {
		ex, err := e.exec("flaky")
		if err != nil {
			return err
		}
		if ex.Annotations[api.AnnotationOperation] != api.OperationForceReconcile {
			return errString("no force-reconcile on the execution")
		}
		return nil
	})
	in = e.waitInst("flaky", "one retry counted", func(in *api.Installation) string {
		if in.Status.AutomaticReconcile == nil || in.Status.AutomaticReconcile.FailedRetries != 1 {
			return "no retry"
		}
		return ""
	})
	e.finish("flaky", g-1, api.DeploySucceeded, nil)
	in = e.waitPhase("flaky", api.InstallationSucceeded)
	if (in.Status.AutomaticReconcile != nil && in.Status.AutomaticReconcile.FailedRetries != 0) || in.Status.LastError != nil {
		t.Fatalf("a success keeps the retry count or the error: %s", statusString(in))
	}
}

func TestInstallation_BadInputFailsWithLastErrorNamingTheCause(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		reason     api.ErrorReason
		says       []string
		never      string
	}{
		{"import fails its schema", `
  imports: {data: [{name: size, value: 0}]}
  blueprint: {inline: {imports: [{name: size, schema: {type: integer, minimum: 1}}]}}`,
			"ImportInvalid", []string{`import "size"`, "schema path /minimum"}, ""},
		{"secret import fails its schema without showing it", `
  imports: {data: [{name: pw, secretRef: {name: pw, key: password}}]}
  blueprint: {inline: {imports: [{name: pw, schema: {type: string, minLength: 20}}]}}`,
			"ImportInvalid", []string{`import "pw"`, "/minLength", "not shown"}, "hunter2"},
		{"template fails", `
  blueprint: {inline: {deployExecutions: [{name: items, template: '{{ fail "no size given" }}'}]}}`,
			"RenderFailed", []string{`execution "items"`, "no size given"}, ""},
		{"template renders no YAML list", `
  blueprint: {inline: {deployExecutions: [{name: items, template: 'deployItems: 7'}]}}`,
			"RenderFailed", []string{`execution "items"`, "bad YAML"}, ""},
		{"blueprint missing", `
  blueprint: {ref: nowhere}`, "BlueprintNotFound", []string{"Blueprint nowhere"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t)
			e.apply(`apiVersion: cairn.dev/v1alpha1
kind: Secret
metadata: {name: pw}
stringData: {password: hunter2}`)
			e.apply("apiVersion: cairn.dev/v1alpha1\nkind: Installation\nmetadata: {name: bad}\nspec:" + tc.spec + "\n")
			in := e.waitPhase("bad", api.InstallationFailed)
			le := in.Status.LastError
			if le == nil || le.Reason != tc.reason {
				t.Fatalf("lastError %+v, want reason %s", le, tc.reason)
			}
			for _, s := range tc.says {
				if !strings.Contains(le.Message, s) {
					t.Errorf("lastError %q does not say %q", le.Message, s)
				}
			}
			if tc.never != "" {
				raw, _ := json.Marshal(in)
				if strings.Contains(string(raw), tc.never) || strings.Contains(e.explain("bad"), tc.never) {
					t.Fatalf("the secret value shows in the installation or its trace")
				}
			}
		})
	}
}

func TestInstallation_SecretImportIsReadThroughTheAPIAndNeverRecorded(t *testing.T) {
	e := start(t)
	e.apply(`apiVersion: cairn.dev/v1alpha1
kind: Secret
metadata: {name: creds}
stringData: {password: s3cr3t-value}
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: sec}
spec:
  imports: {data: [{name: pw, secretRef: {name: creds, key: password}}]}
  blueprint:
    inline:
      imports: [{name: pw, schema: {type: string}}]
      deployExecutions:
      - name: items
        template: "deployItems: [{name: a, type: mock, config: {pw: {{ .imports.pw | quote }}}}]"
`)
	gen := e.finish("sec", 0, api.DeploySucceeded, nil)
	in := e.waitPhase("sec", api.InstallationSucceeded)
	ex, _ := e.exec("sec")
	sec, err := client.For[*api.Secret](e.c).Get(e.ctx, e.ns, "creds")
	if err != nil {
		t.Fatal(err)
	}
	want := api.SecretReference{Name: "creds", Key: "password", Version: sec.ResourceVersion}.String()
	if string(ex.Spec.DeployItems[0].Config) != `{"pw":"`+want+`"}` {
		t.Fatalf("the deploy item's config is %s, want the reference %s", ex.Spec.DeployItems[0].Config, want)
	}
	raw, _ := json.Marshal(in.Status)
	xraw, _ := json.Marshal(ex)
	if strings.Contains(string(raw), "s3cr3t") || strings.Contains(string(xraw), "s3cr3t") || strings.Contains(e.explain("sec"), "s3cr3t") {
		t.Fatalf("the secret value is in the status, the execution or the trace: %s", raw)
	}
	if g := in.Status.ImportGenerations; len(g) != 1 || g[0].Source != "secret/creds:password" {
		t.Fatalf("import generations %+v", g)
	}
	// A changed Secret renders a changed reference: the execution (and
	// its items) run again, though no value is in its spec.
	sec.StringData = map[string]string{"password": "n3w-s3cr3t-value"}
	if sec, err = client.For[*api.Secret](e.c).Update(e.ctx, sec); err != nil {
		t.Fatal(err)
	}
	// Secrets are not watched: the installation looks at its imports
	// again when asked (or at its succeededReconcile interval).
	if _, err := client.For[*api.Installation](e.c).Patch(e.ctx, e.ns, "sec",
		[]byte(`{"metadata":{"annotations":{"cairn.dev/operation":"reconcile"}}}`), false); err != nil {
		t.Fatal(err)
	}
	e.finish("sec", gen, api.DeploySucceeded, nil)
	ex, _ = e.exec("sec")
	want = api.SecretReference{Name: "creds", Key: "password", Version: sec.ResourceVersion}.String()
	if string(ex.Spec.DeployItems[0].Config) != `{"pw":"`+want+`"}` {
		t.Fatalf("after the Secret changed, the config is %s, want %s", ex.Spec.DeployItems[0].Config, want)
	}
}

func TestInstallation_MissingBlueprintCreatedLaterIsReconciled(t *testing.T) {
	e := start(t)
	e.apply("apiVersion: cairn.dev/v1alpha1\nkind: Installation\nmetadata: {name: late}\nspec:\n  blueprint: {ref: later}\n")
	in := e.waitPhase("late", api.InstallationFailed)
	if in.Status.LastError == nil || in.Status.LastError.Reason != "BlueprintNotFound" {
		t.Fatalf("lastError %+v, want %s", in.Status.LastError, "BlueprintNotFound")
	}
	e.apply(`apiVersion: cairn.dev/v1alpha1
kind: Blueprint
metadata: {name: later}
spec:
  deployExecutions:
  - name: items
    template: "deployItems: [{name: a, type: mock, config: {phase: Succeeded}}]"
`)
	e.finish("late", 0, api.DeploySucceeded, nil)
	in = e.waitPhase("late", api.InstallationSucceeded)
	if in.Status.LastError != nil {
		t.Fatalf("the old error stayed: %s", statusString(in))
	}
}

func TestInstallation_EditedBlueprintReRendersTheInstallationsUsingIt(t *testing.T) {
	e := start(t)
	e.apply(`apiVersion: cairn.dev/v1alpha1
kind: Blueprint
metadata: {name: web}
spec:
  deployExecutions:
  - name: items
    template: "deployItems: [{name: a, type: mock, config: {version: 1}}]"
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: site}
spec:
  blueprint: {ref: web}
`)
	g := e.finish("site", 0, api.DeploySucceeded, nil)
	before := e.waitPhase("site", api.InstallationSucceeded)
	if before.Status.BlueprintGeneration == "" {
		t.Fatalf("the blueprint's version is not recorded: %s", statusString(before))
	}
	if _, err := e.c.Patch(e.ctx, api.KindBlueprint, e.ns, "web",
		[]byte(`{"spec":{"deployExecutions":[{"name":"items","template":"deployItems: [{name: a, type: mock, config: {version: 2}}]"}]}}`), false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, wait, "the execution re-rendered from the edited blueprint", func() error {
		ex, err := e.exec("site")
		if err != nil {
			return err
		}
		if got := string(ex.Spec.DeployItems[0].Config); got != `{"version":2}` {
			return errString("config " + got)
		}
		return nil
	})
	e.finish("site", g, api.DeploySucceeded, nil)
	e.waitInst("site", "Succeeded with the new blueprint version", func(in *api.Installation) string {
		if in.Status.Phase != api.InstallationSucceeded || in.Status.BlueprintGeneration == before.Status.BlueprintGeneration {
			return "not yet"
		}
		return ""
	})
	e.waitExplain("site", "5. Blueprint web changed")
}

func TestInstallation_ChangedHandMadeImportReRendersASucceededInstallation(t *testing.T) {
	e := start(t)
	e.apply(`apiVersion: cairn.dev/v1alpha1
kind: DataObject
metadata: {name: settings}
data: {color: red}
---
apiVersion: cairn.dev/v1alpha1
kind: Installation
metadata: {name: painter}
spec:
  imports: {data: [{name: s, dataRef: settings}]}
  blueprint:
    inline:
      deployExecutions:
      - name: items
        template: "deployItems: [{name: a, type: mock, config: {color: {{ .imports.s.color }}}}]"
`)
	g := e.finish("painter", 0, api.DeploySucceeded, nil)
	e.waitPhase("painter", api.InstallationSucceeded)
	if _, err := e.c.Patch(e.ctx, api.KindDataObject, e.ns, "settings", []byte(`{"data":{"color":"blue"}}`), false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, wait, "the execution re-rendered with the new import", func() error {
		ex, err := e.exec("painter")
		if err != nil {
			return err
		}
		if got := string(ex.Spec.DeployItems[0].Config); got != `{"color":"blue"}` {
			return errString("config " + got)
		}
		return nil
	})
	e.finish("painter", g, api.DeploySucceeded, nil)
	e.waitPhase("painter", api.InstallationSucceeded)
	e.waitExplain("painter", "5. import s changed (dataobject/settings): reconcile annotation added")
}
