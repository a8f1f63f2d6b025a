package installation

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
)

func mkInst(name string, phase api.InstallationPhase, gen, observed int64, ann ...string) *api.Installation {
	in := &api.Installation{ObjectMeta: api.ObjectMeta{Name: name, Generation: gen, Finalizers: []string{api.FinalizerInstallation}},
		Status: api.InstallationStatus{Phase: phase, ObservedGeneration: observed}}
	if len(ann) > 0 {
		in.Annotations = map[string]string{}
		for i := 0; i+1 < len(ann); i += 2 {
			in.Annotations[ann[i]] = ann[i+1]
		}
	}
	return in
}

func TestCore_EveryStep(t *testing.T) {
	now := time.Now()
	noFinalizer := mkInst("a", "", 1, 0)
	noFinalizer.Finalizers = nil
	deleting := mkInst("a", api.InstallationSucceeded, 1, 1)
	deleting.DeletionTimestamp = &now
	deletingNoFinalizer := mkInst("a", api.InstallationProgressing, 1, 1)
	deletingNoFinalizer.DeletionTimestamp, deletingNoFinalizer.Finalizers = &now, nil
	for _, tc := range []struct {
		name string
		in   *api.Installation
		want Flow
	}{
		{"1. ignore on a final phase", mkInst("a", api.InstallationFailed, 2, 1, api.AnnotationIgnore, "true"), FlowIgnore},
		{"1. ignore on a non-final phase is not honoured", mkInst("a", api.InstallationProgressing, 1, 1, api.AnnotationIgnore, "true"), FlowStandard},
		{"2. finalizer added first", noFinalizer, FlowAddFinalizer},
		{"3. deletion", deleting, FlowDelete},
		{"3. deletion without our finalizer", deletingNoFinalizer, FlowDelete},
		{"4. force-reconcile", mkInst("a", api.InstallationSucceeded, 1, 1, api.AnnotationOperation, api.OperationForceReconcile), FlowForce},
		{"4. reconcile", mkInst("a", api.InstallationSucceeded, 1, 1, api.AnnotationOperation, api.OperationReconcile), FlowStandard},
		{"4. abort", mkInst("a", api.InstallationProgressing, 1, 1, api.AnnotationOperation, api.OperationAbort), FlowStandard},
		{"5. final and unmodified: nested check", mkInst("a", api.InstallationSucceeded, 3, 3), FlowNestedCheck},
		{"5. final but modified", mkInst("a", api.InstallationSucceeded, 4, 3), FlowStandard},
		{"6. not final", mkInst("a", api.InstallationPendingDependencies, 1, 1), FlowStandard},
		{"6. new", mkInst("a", "", 1, 0), FlowStandard},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Core(tc.in); got != tc.want {
				t.Fatalf("Core = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCombined_AggregatesNestedPhases(t *testing.T) {
	exec := func(phase api.DeployPhase, gen, observed int64, op string) Nested {
		e := &api.Execution{ObjectMeta: api.ObjectMeta{Name: "e", Generation: gen}, Status: api.ExecutionStatus{Phase: phase, ObservedGeneration: observed,
			LastError: &api.LastError{Message: "deploy item db failed"}}}
		if op != "" {
			e.Annotations = map[string]string{api.AnnotationOperation: op}
		}
		return ExecutionState(e)
	}
	sub := func(phase api.InstallationPhase, gen, observed int64) Nested {
		return InstallationState(mkInst("s", phase, gen, observed))
	}
	for _, tc := range []struct {
		name   string
		nested []Nested
		want   api.InstallationPhase
		reason string
	}{
		{"nothing nested", nil, "", ""},
		{"all succeeded", []Nested{exec(api.DeploySucceeded, 1, 1, ""), sub(api.InstallationSucceeded, 1, 1)}, api.InstallationSucceeded, ""},
		{"execution not up to date", []Nested{exec(api.DeploySucceeded, 2, 1, "")}, api.InstallationProgressing, "generation 2"},
		{"execution queued", []Nested{exec(api.DeploySucceeded, 1, 1, api.OperationReconcile)}, api.InstallationProgressing, "queued"},
		{"execution failed names the item", []Nested{exec(api.DeployFailed, 1, 1, ""), sub(api.InstallationSucceeded, 1, 1)}, api.InstallationFailed, "deploy item db"},
		{"progressing wins over failed", []Nested{exec(api.DeployFailed, 1, 1, ""), sub(api.InstallationPendingDependencies, 1, 1)}, api.InstallationProgressing, "PendingDependencies"},
		{"aborted sub", []Nested{sub(api.InstallationAborted, 1, 1)}, api.InstallationAborted, ""},
		{"sub not up to date", []Nested{sub(api.InstallationSucceeded, 2, 1)}, api.InstallationProgressing, "generation 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := Combined(tc.nested)
			if got != tc.want {
				t.Fatalf("Combined = %q, want %q", got, tc.want)
			}
			if tc.reason != "" && (why == nil || !strings.Contains(describe(why), tc.reason)) {
				t.Fatalf("reason %q does not say %q", describe(why), tc.reason)
			}
		})
	}
}

func TestUpdateRequired(t *testing.T) {
	imps := []Import{{Name: "db", Source: "dataobject/db", Generation: "config/1"}}
	base := func() *api.Installation {
		in := mkInst("a", api.InstallationSucceeded, 2, 2)
		in.Status.ImportGenerations = Generations(imps)
		return in
	}
	recordBlueprint := func(in *api.Installation) []Import { in.Status.BlueprintGeneration = "uid/1"; return imps }
	for _, tc := range []struct {
		name   string
		change func(in *api.Installation) []Import
		bp     string
		want   string
	}{
		{"nothing changed", func(*api.Installation) []Import { return imps }, "", ""},
		{"blueprint unchanged", recordBlueprint, "uid/1", ""},
		{"blueprint edited", recordBlueprint, "uid/2", "Blueprint  changed (uid/2, rendered from uid/1)"},
		{"blueprint recreated", recordBlueprint, "other/1", "Blueprint  changed"},
		{"blueprint version never recorded", func(*api.Installation) []Import { return imps }, "uid/2", ""},
		{"blueprint missing now", recordBlueprint, "", ""},
		{"generation changed", func(in *api.Installation) []Import { in.Generation = 3; return imps }, "", "generation 3"},
		{"import generation changed", func(*api.Installation) []Import {
			return []Import{{Name: "db", Source: "dataobject/db", Generation: "config/2"}}
		}, "", "import db changed"},
		{"import source changed", func(*api.Installation) []Import {
			return []Import{{Name: "db", Source: "value", Generation: "config/1"}}
		}, "", "import db changed"},
		{"import added", func(*api.Installation) []Import { return append(imps, Import{Name: "x"}) }, "", "set of imports"},
		{"failed and asked to reconcile", func(in *api.Installation) []Import {
			in.Status.Phase = api.InstallationFailed
			in.Annotations = map[string]string{api.AnnotationOperation: api.OperationReconcile}
			return imps
		}, "", "Failed installation"},
		{"succeeded and asked to reconcile", func(in *api.Installation) []Import {
			in.Annotations = map[string]string{api.AnnotationOperation: api.OperationReconcile}
			return imps
		}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			got := UpdateRequired(in, tc.change(in), tc.bp)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("UpdateRequired = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestInputsChanged_ComparesWhatWasRecorded(t *testing.T) {
	rec := []Import{{Name: "db", Source: "dataobject/db", Exists: true, Generation: "h1"}, {Name: "pw", Source: "secret/pw", Exists: true, Generation: "s/1"}}
	mk := func(phase api.InstallationPhase) *api.Installation {
		in := mkInst("a", phase, 1, 1)
		in.Status.ImportGenerations = Generations(rec)
		in.Status.BlueprintGeneration = "uid/1"
		return in
	}
	with := func(name, gen string, exists bool) []Import {
		out := append([]Import(nil), rec...)
		for i := range out {
			if out[i].Name == name {
				out[i].Generation, out[i].Exists = gen, exists
			}
		}
		return out
	}
	owned := func(imps []Import) []Import { imps[0].Owner = "database"; return imps }
	fromParent := func(imps []Import) []Import { imps[0].FromParent = true; return imps }
	for _, tc := range []struct {
		name string
		in   *api.Installation
		imps []Import
		bp   string
		want string
	}{
		{"nothing changed", mk(api.InstallationSucceeded), rec, "uid/1", ""},
		{"a DataObject changed", mk(api.InstallationSucceeded), with("db", "h2", true), "uid/1", "import db changed (dataobject/db)"},
		{"a Secret changed, failed installation", mk(api.InstallationFailed), with("pw", "s/2", true), "uid/1", "import pw changed (secret/pw)"},
		{"an import gone is no change", mk(api.InstallationSucceeded), with("db", "", false), "uid/1", ""},
		{"an export of a sibling is left to it", mk(api.InstallationSucceeded), owned(with("db", "config/2", true)), "uid/1", ""},
		{"an import of the parent's is left to it", mk(api.InstallationSucceeded), fromParent(with("db", "h2", true)), "uid/1", ""},
		{"an import never recorded is no change", mk(api.InstallationSucceeded), append(with("db", "h1", true), Import{Name: "new", Exists: true}), "uid/1", ""},
		{"the blueprint edited", mk(api.InstallationSucceeded), rec, "uid/2", "Blueprint  changed"},
		{"aborted stays aborted", mk(api.InstallationAborted), with("db", "h2", true), "uid/2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := InputsChanged(tc.in, tc.imps, tc.bp)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("InputsChanged = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBlockers_EveryConditionOfStep41(t *testing.T) {
	dep := func(phase api.InstallationPhase, gen, observed int64, ann ...string) map[string]*api.Installation {
		return map[string]*api.Installation{"database": mkInst("database", phase, gen, observed, ann...)}
	}
	ok := Import{Name: "db", Source: "dataobject/db", Exists: true, Exporters: []string{"database"}, Owner: "database"}
	progressing := mkInst("parent", api.InstallationProgressing, 1, 1)
	for _, tc := range []struct {
		name     string
		parent   *api.Installation
		siblings map[string]*api.Installation
		imps     []Import
		want     string
	}{
		{"everything satisfied", progressing, dep(api.InstallationSucceeded, 1, 1), []Import{ok}, ""},
		{"root installation with a satisfied value", nil, nil, []Import{{Name: "v", Source: "value", Exists: true}}, ""},
		{"sibling not Succeeded", progressing, dep(api.InstallationProgressing, 1, 1), []Import{ok}, "import db waits for sibling database (Progressing)"},
		{"sibling not up to date", progressing, dep(api.InstallationSucceeded, 2, 1), []Import{ok}, "generation 2 not observed"},
		{"sibling queued for reconcile", progressing, dep(api.InstallationSucceeded, 1, 1, api.AnnotationOperation, api.OperationReconcile), []Import{ok}, "queued for reconcile"},
		{"sibling queued for force-reconcile", progressing, dep(api.InstallationSucceeded, 1, 1, api.AnnotationOperation, api.OperationForceReconcile), []Import{ok}, "queued for force-reconcile"},
		{"parent not Progressing", mkInst("parent", api.InstallationSucceeded, 1, 1), dep(api.InstallationSucceeded, 1, 1), []Import{ok}, "parent parent is not Progressing (Succeeded)"},
		{"import missing", nil, nil, []Import{{Name: "x", Source: "dataobject/x"}}, "import x: dataobject/x does not exist"},
		{"import missing, sibling will export it", progressing, dep(api.InstallationSucceeded, 1, 1), []Import{{Name: "db", Source: "dataobject/db", Exporters: []string{"database"}}}, "waits for sibling database to export"},
		{"import missing while its exporter runs: the sibling alone", progressing, dep(api.InstallationProgressing, 1, 1), []Import{{Name: "db", Source: "dataobject/db", Exporters: []string{"database"}}}, "import db waits for sibling database (Progressing)"},
		{"import owned by a stranger", nil, nil, []Import{{Name: "db", Source: "dataobject/db", Exists: true, Owner: "elsewhere"}}, "owned by installation elsewhere"},
		{"import of the parent's import", progressing, nil, []Import{{Name: "p", Source: "parent/x:p", Exists: true, FromParent: true, Owner: ""}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := JoinBlockers(Blockers(tc.parent, tc.siblings, tc.imps), true)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("Blockers = %q, want %q", got, tc.want)
			}
			if strings.Contains(tc.name, "the sibling alone") && strings.Contains(got, "to export") {
				t.Fatalf("Blockers = %q: the import of a running sibling is reported missing too", got)
			}
		})
	}
}

func TestBlockers_LastErrorStaysTheSameWhileTheSiblingMoves(t *testing.T) {
	im := []Import{{Name: "db", Source: "dataobject/db", Exporters: []string{"database"}}}
	parent := mkInst("parent", api.InstallationProgressing, 1, 1)
	want := "import db waits for sibling database"
	states := map[string]bool{}
	for _, s := range []*api.Installation{
		mkInst("database", "", 1, 0),
		mkInst("database", api.InstallationPendingDependencies, 1, 0),
		mkInst("database", api.InstallationProgressing, 1, 1),
		mkInst("database", api.InstallationSucceeded, 2, 1),
		mkInst("database", api.InstallationSucceeded, 1, 1, api.AnnotationOperation, api.OperationReconcile),
	} {
		b := Blockers(parent, map[string]*api.Installation{"database": s}, im)
		if got := JoinBlockers(b, false); got != want {
			t.Fatalf("lastError message %q while the sibling is %s, want %q", got, JoinBlockers(b, true), want)
		}
		states[JoinBlockers(b, true)] = true
	}
	if len(states) != 5 {
		t.Fatalf("the trace should tell the five states apart: %v", states)
	}
}

func TestSiblingImporters_NamesWhoImportsWhat(t *testing.T) {
	db := mkInst("database", api.InstallationSucceeded, 1, 1)
	db.Spec.Exports.Data = []api.DataExport{{Name: "connection", DataRef: "db-connection"}}
	app := mkInst("app", api.InstallationSucceeded, 1, 1)
	app.Spec.Imports.Data = []api.DataImport{{Name: "db", DataRef: "db-connection"}}
	other := mkInst("other", api.InstallationSucceeded, 1, 1)
	other.Spec.Imports.Data = []api.DataImport{{Name: "x", DataRef: "unrelated"}}
	if got := SiblingImporters(db, []*api.Installation{app, other, db}); len(got) != 1 || got[0] != "sibling app imports db-connection" {
		t.Fatalf("SiblingImporters = %v", got)
	}
	if got := SiblingImporters(db, []*api.Installation{other}); len(got) != 0 {
		t.Fatalf("SiblingImporters = %v, want none", got)
	}
	infra := mkInst("infra", api.InstallationSucceeded, 1, 1)
	infra.Spec.Exports.Targets = []api.TargetExport{{Name: "kube", Target: "cluster"}}
	web := mkInst("web", api.InstallationSucceeded, 1, 1)
	web.Spec.Imports.Targets = []api.TargetImport{{Name: "k", Target: "cluster"}}
	web.Spec.Imports.Data = []api.DataImport{{Name: "x", DataRef: "cluster"}} // a DataObject of that name is another thing
	if got := SiblingImporters(infra, []*api.Installation{web, app}); len(got) != 1 || got[0] != "sibling web imports target cluster" {
		t.Fatalf("SiblingImporters of a target = %v", got)
	}
}

func TestHasImported_OnlyWhenEveryImportFromTheExporterIsAtItsNewGeneration(t *testing.T) {
	db := mkInst("database", api.InstallationSucceeded, 1, 1)
	db.OwnerReferences = []api.OwnerReference{{Kind: api.KindInstallation, Name: "shop", UID: "p", Controller: true}}
	db.Spec.Exports.Data = []api.DataExport{{Name: "connection", DataRef: "db-connection"}}
	db.Spec.Exports.Targets = []api.TargetExport{{Name: "kube", Target: "cluster"}}
	app := func(gens ...api.ImportGeneration) *api.Installation {
		in := mkInst("app", api.InstallationProgressing, 1, 1)
		in.Status.ImportGenerations = gens
		return in
	}
	data := func(gen string) api.ImportGeneration {
		return api.ImportGeneration{Name: "db", Source: "dataobject/shop-db-connection", Generation: gen}
	}
	target := func(gen string) api.ImportGeneration {
		return api.ImportGeneration{Name: "k", Source: "target/shop-cluster", Generation: gen}
	}
	other := api.ImportGeneration{Name: "x", Source: "value", Generation: "h"}
	for _, tc := range []struct {
		name string
		in   *api.Installation
		want bool
	}{
		{"nothing recorded yet", app(), false},
		{"only other imports", app(other), false},
		{"the data export at the new generation", app(data("config/g2"), other), true},
		{"the data export at the old generation", app(data("config/g1")), false},
		{"data new, target old", app(data("config/g2"), target("config/g1")), false},
		{"data and target new", app(data("config/g2"), target("config/g2")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HasImported(tc.in, db, "g2"); got != tc.want {
				t.Fatalf("HasImported = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTargetSpecOf_ChecksTheRenderedValue(t *testing.T) {
	for _, tc := range []struct {
		name, declared, value string
		want                  string // the spec as JSON, or what the error says
		ok                    bool
	}{
		{"type and config", api.ParameterTarget, `{"type":"kubernetes","config":{"endpoint":"k"}}`, `{"type":"kubernetes","config":{"endpoint":"k"}}`, true},
		{"undeclared export", "", `{"type":"ssh"}`, `{"type":"ssh"}`, true},
		{"an imported target passed on (its name ignored)", api.ParameterTarget, `{"name":"prod","type":"ssh","config":null}`, `{"type":"ssh"}`, true},
		{"declared as data", api.ParameterData, `{"type":"ssh"}`, "declares it as data", false},
		{"not an object", api.ParameterTarget, `"just-a-string"`, `must render an object {type, config}, not "just-a-string"`, false},
		{"no type", api.ParameterTarget, `{"config":{}}`, "its type is missing", false},
		{"type not a string", api.ParameterTarget, `{"type":3}`, "its type must be a string", false},
		{"unknown field", api.ParameterTarget, `{"type":"ssh","host":"x"}`, `unknown field "host"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := TargetSpecOf("kube", tc.declared, json.RawMessage(tc.value))
			if !tc.ok {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `export "kube"`) {
					t.Fatalf("TargetSpecOf = %v, want an error naming the export and saying %q", err, tc.want)
				}
				return
			}
			got, _ := json.Marshal(spec)
			if err != nil || string(got) != tc.want {
				t.Fatalf("TargetSpecOf = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestAutomaticReconcile_BackoffAndBounds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	failed := func(maxRetries, retries int, lastRetry time.Time) *api.Installation {
		in := mkInst("a", api.InstallationFailed, 1, 1)
		in.Spec.AutomaticReconcile = &api.AutomaticReconcile{FailedReconcile: &api.FailedReconcile{MaxRetries: maxRetries, Interval: &api.Duration{Duration: 10 * time.Second}}}
		if retries > 0 {
			in.Status.AutomaticReconcile = &api.AutomaticReconcileStatus{FailedRetries: retries, LastRetry: lastRetry}
		}
		return in
	}
	succeeded := mkInst("a", api.InstallationSucceeded, 1, 1)
	succeeded.Spec.AutomaticReconcile = &api.AutomaticReconcile{SucceededReconcile: &api.SucceededReconcile{Interval: &api.Duration{Duration: time.Minute}}}
	for _, tc := range []struct {
		name      string
		in        *api.Installation
		hasParent bool
		now       time.Time
		want      Retry
	}{
		{"first retry waits the interval", failed(3, 0, time.Time{}), false, t0.Add(4 * time.Second), Retry{After: 6 * time.Second, Failed: true}},
		{"first retry due", failed(3, 0, time.Time{}), false, t0.Add(10 * time.Second), Retry{Now: true, Failed: true}},
		{"backoff doubles", failed(3, 2, t0), false, t0.Add(30 * time.Second), Retry{After: 10 * time.Second, Failed: true}},
		{"maxRetries reached", failed(3, 3, t0), false, t0.Add(time.Hour), Retry{}},
		{"no bound with maxRetries 0", failed(0, 50, t0), false, t0.Add(2 * time.Hour), Retry{Now: true, Failed: true}},
		{"nested installations are not retried by themselves", failed(3, 0, time.Time{}), true, t0.Add(time.Hour), Retry{}},
		{"succeeded: periodic", succeeded, false, t0.Add(20 * time.Second), Retry{After: 40 * time.Second}},
		{"succeeded: due", succeeded, false, t0.Add(time.Minute), Retry{Now: true}},
		{"no automaticReconcile", mkInst("a", api.InstallationFailed, 1, 1), false, t0.Add(time.Hour), Retry{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AutomaticReconcile(tc.in, tc.hasParent, t0, tc.now); got != tc.want {
				t.Fatalf("AutomaticReconcile = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNames_AreShortEnoughAndStable(t *testing.T) {
	if got := ChildName("shop", "database"); got != "shop-database" {
		t.Fatal(got)
	}
	if got := DataObjectName("", "db-connection"); got != "db-connection" {
		t.Fatal(got)
	}
	if got := DataObjectName("shop", "db-connection"); got != "shop-db-connection" {
		t.Fatal(got)
	}
	long := ChildName(strings.Repeat("a", 60), strings.Repeat("b", 30))
	if len(long) > 63 || long != ChildName(strings.Repeat("a", 60), strings.Repeat("b", 30)) {
		t.Fatalf("long name %q", long)
	}
}
