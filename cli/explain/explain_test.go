package explain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/clitest"
	"cairn.dev/cairn/cli/explain"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/server/servertest"
	"cairn.dev/cairn/trace"
)

func TestParseArgs_AcceptsKindSlashNameOrKindName(t *testing.T) {
	cases := []struct {
		args       []string
		kind, name string
		err        string
	}{
		{args: []string{"namespace/demo"}, kind: "namespace", name: "demo"},
		{args: []string{"ns", "demo"}, kind: "ns", name: "demo"},
		{args: []string{"Installation/preview-42"}, kind: "Installation", name: "preview-42"},
		{args: []string{"demo"}, err: "KIND/NAME or KIND NAME"},
		{args: []string{"ns/"}, err: "name of the ns is missing"},
		{args: []string{"/demo"}, err: "kind is missing"},
		{args: []string{"", "demo"}, err: "kind is missing"},
		{args: []string{"ns", ""}, err: "name of the ns is missing"},
		{args: []string{"ns/a/b"}, err: "cannot contain"},
		{args: []string{"ns", "a/b"}, err: "cannot contain"},
		{args: []string{"ns/demo", "x"}, err: "KIND/NAME or KIND NAME"},
		{args: nil, err: "name one object"},
		{args: []string{"a", "b", "c"}, err: "name one object"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			kind, name, err := explain.ParseArgs(c.args)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("err = %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || kind != c.kind || name != c.name {
				t.Errorf("= %q, %q, %v; want %q, %q", kind, name, err, c.kind, c.name)
			}
		})
	}
}

var now = time.Date(2026, 1, 2, 10, 5, 0, 0, time.UTC)

func at(min, sec, ms int) time.Time {
	return time.Date(2026, 1, 2, 10, min, sec, ms*int(time.Millisecond), time.UTC)
}

var (
	nsKind     = api.KindInfo{Kind: "Namespace", Plural: "namespaces"}
	nsRef      = api.ObjectReference{Kind: "Namespace", Name: "demo"}
	instKind   = api.KindInfo{Kind: "Installation", Plural: "installations", Namespaced: true}
	instRef    = api.ObjectReference{Kind: "Installation", Namespace: "team", Name: "app"}
	secretKind = api.KindInfo{Kind: "Secret", Plural: "secrets", Namespaced: true, Sensitive: []string{"data", "stringData", "status"}}
)

func object(kind string, ref api.ObjectReference, fields map[string]string) *api.Object {
	o := &api.Object{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: kind},
		ObjectMeta: api.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, UID: "u1", CreationTimestamp: at(0, 0, 0)}}
	for k, v := range fields {
		o.SetField(k, json.RawMessage(v))
	}
	return o
}

func TestWrite_ReconcilesNewestLastWithStepSymbols(t *testing.T) {
	deleted := at(2, 0, 0)
	ns := object("Namespace", nsRef, map[string]string{"status": `{"phase":"Terminating"}`})
	ns.DeletionTimestamp = &deleted
	ns.Finalizers = []string{api.FinalizerCascadeDeletion}

	inst := object("Installation", instRef, map[string]string{
		"status": `{"phase":"Progressing","conditions":[{"type":"Ready","status":"False","reason":"PendingDependencies","message":"import db waits"}]}`,
	})
	inst.OwnerReferences = []api.OwnerReference{{Kind: "Installation", Name: "parent", UID: "p", Controller: true}, {Kind: "Namespace", Name: "team", UID: "n"}}
	inst.Finalizers = []string{"cairn.dev/installation"}

	cases := []struct {
		name string
		kind api.KindInfo
		ref  api.ObjectReference
		obj  *api.Object
		tr   *api.Trace
		want string
	}{
		{
			name: "deleting namespace, two reconciles",
			kind: nsKind, ref: nsRef, obj: ns,
			tr: &api.Trace{Object: nsRef, Reconciles: []api.TraceReconcile{
				{Controller: "gc", Key: "demo", Start: at(2, 0, 0), End: at(2, 0, 12), Result: "requeue in 5s", Steps: []api.TraceStep{
					{Type: api.StepSubflow, Message: "deletion"},
					{Type: api.StepCheck, Message: "2 dependents left"},
					{Type: api.StepAction, Message: "deleted secret demo/db"},
				}},
				{Controller: "gc", Key: "0b9e", Start: at(4, 0, 0), End: at(4, 1, 500), Result: "failed: store unavailable", Error: "store unavailable",
					Truncated: 3, Steps: []api.TraceStep{
						{Type: api.StepExit, Message: "waiting for\nsecret demo/other"},
					}},
			}},
			want: `Namespace demo: deleting since 3m (phase Terminating)
  finalizers left: cairn.dev/cascade-deletion

Last 2 reconciles, oldest first:

gc at 2026-01-02T10:02:00Z (3m ago), took 12ms: requeue in 5s
  ↪ deletion
  ❔ 2 dependents left
  ✔️ deleted secret demo/db

gc (key 0b9e) at 2026-01-02T10:04:00Z (60s ago), took 1.5s: failed: store unavailable
  🚪 waiting for\nsecret demo/other
  … 3 more steps not recorded
`,
		},
		{
			name: "live installation with owners and conditions, one reconcile",
			kind: instKind, ref: instRef, obj: inst,
			tr: &api.Trace{Object: instRef, Reconciles: []api.TraceReconcile{
				{Controller: "installation", Key: "team/app", Start: at(4, 59, 999), End: at(4, 59, 999).Add(250 * time.Microsecond), Result: "done", Steps: []api.TraceStep{
					{Type: api.StepExit, Message: "PendingDependencies: import `db` waits for sibling `database` (Progressing)"},
					{Type: "future", Message: "a step type this version does not know"},
				}},
			}},
			want: `Installation team/app: Progressing, created 5m ago
  finalizers: cairn.dev/installation
  owners: installation/parent (controller), namespace/team
  condition Ready=False (PendingDependencies): import db waits

Last reconcile:

installation at 2026-01-02T10:04:59Z (0s ago), took 250µs: done
  🚪 PendingDependencies: import ` + "`db` waits for sibling `database`" + ` (Progressing)
  • a step type this version does not know
`,
		},
		{
			name: "no trace",
			kind: nsKind, ref: nsRef, obj: ns, tr: &api.Trace{Object: nsRef},
			want: `Namespace demo: deleting since 3m (phase Terminating)
  finalizers left: cairn.dev/cascade-deletion

No controller has reconciled namespace/demo since the controllers started.
`,
		},
		{
			name: "gone object with a trace",
			kind: instKind, ref: instRef, obj: nil,
			tr: &api.Trace{Object: instRef, Reconciles: []api.TraceReconcile{
				{Controller: "gc", Key: "team/app", Result: "done", Steps: []api.TraceStep{{Type: api.StepAction, Message: "deleted it"}}},
				{Controller: "installation", Key: "team/app", Result: "done"}, // recorded nothing: not shown
			}},
			want: `Installation team/app: not found (deleted, or never created)

(1 reconciles that recorded no step are not shown)
Last reconcile:

gc at <unknown time>, took ?: done
  ✔️ deleted it
`,
		},
		{
			name: "sensitive status is not shown",
			kind: secretKind, ref: api.ObjectReference{Kind: "Secret", Namespace: "team", Name: "db"},
			obj: object("Secret", api.ObjectReference{Kind: "Secret", Namespace: "team", Name: "db"}, map[string]string{
				"status": `{"phase":"hunter2","message":"hunter2"}`, "data": `{"password":"aHVudGVyMg=="}`,
			}),
			tr: nil,
			want: `Secret team/db: created 5m ago

No controller has reconciled secret/db in namespace team since the controllers started.
`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := explain.Write(&b, c.kind, c.ref, c.obj, c.tr, now); err != nil {
				t.Fatal(err)
			}
			if b.String() != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), c.want)
			}
		})
	}
}

// createDeletingNamespace makes namespace demo with a secret in it, then
// deletes the namespace: with no controllers running it stays deleting,
// held by its finalizer.
func createDeletingNamespace(t *testing.T, srv *servertest.Server) {
	t.Helper()
	r := clitest.RunContext(context.Background(), t, srv.Config(), clitest.Cmd{
		Args: []string{"apply", "-f", "-", "-n", "demo"},
		Stdin: "apiVersion: cairn.dev/v1alpha1\nkind: Namespace\nmetadata: {name: demo}\n---\n" +
			"apiVersion: cairn.dev/v1alpha1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: hunter2}\n",
	}, nil)
	if r.Error != nil {
		t.Fatalf("apply: %v %s", r.Error, r.Err)
	}
	sys := identity.With(context.Background(), identity.System())
	if _, _, err := srv.Registry.Delete(sys, api.KindNamespace, "", "demo", api.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// leading serves traces from a trace store as the process leading the
// controllers would.
type leading struct{ s *trace.Store }

func (l leading) Trace(kind, ns, name string) (*api.Trace, bool) {
	tr, _ := l.s.Get(kind, ns, name)
	return tr, true
}

func (leading) Leader(context.Context) (string, error) { return "", nil }

// startWithTraces starts a test server whose traces come from a store of
// its own, empty until the test adds to it.
func startWithTraces(t *testing.T) (*servertest.Server, *trace.Store) {
	t.Helper()
	store := trace.NewStore(0, 0)
	return servertest.Start(t, servertest.WithTraces(leading{store})), store
}

func TestExplain_WithoutTraceEndpointPrintsNoTraceAndObjectState(t *testing.T) {
	srv, _ := startWithTraces(t)
	createDeletingNamespace(t, srv)
	for _, args := range [][]string{{"explain", "namespace/demo"}, {"explain", "ns", "demo"}} {
		r := clitest.Run(t, srv.Config(), args...)
		if r.Error != nil {
			t.Fatalf("%v: %v %s", args, r.Error, r.Err)
		}
		for _, want := range []string{
			"Namespace demo: deleting since ",
			"\n  finalizers left: " + api.FinalizerCascadeDeletion + "\n",
			"\nNo controller has reconciled namespace/demo since the controllers started.\n",
		} {
			if !strings.Contains(r.Out, want) {
				t.Errorf("%v output lacks %q:\n%s", args, want, r.Out)
			}
		}
	}

	r := clitest.Run(t, srv.Config(), "explain", "secret/db", "-n", "demo")
	if r.Error != nil {
		t.Fatalf("explain secret: %v %s", r.Error, r.Err)
	}
	if !strings.HasPrefix(r.Out, "Secret demo/db: created ") || !strings.Contains(r.Out, "No controller has reconciled secret/db in namespace demo") {
		t.Errorf("explain secret:\n%s", r.Out)
	}
	if strings.Contains(r.Out, "hunter2") || strings.Contains(r.Out, "aHVudGVyMg") {
		t.Errorf("explain printed a secret value:\n%s", r.Out)
	}
}

// TestExplain_WithoutControllersPrintsObjectStateAndWhyNoTrace: a server
// whose controllers run nowhere has no trace to give (503); explain still
// prints what the object says, and why there is no trace.
func TestExplain_WithoutControllersPrintsObjectStateAndWhyNoTrace(t *testing.T) {
	srv := servertest.Start(t)
	createDeletingNamespace(t, srv)
	r := clitest.Run(t, srv.Config(), "explain", "namespace/demo")
	if r.Error != nil {
		t.Fatalf("explain: %v %s", r.Error, r.Err)
	}
	for _, want := range []string{"Namespace demo: deleting since ", "\nNo trace is available: "} {
		if !strings.Contains(r.Out, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Out)
		}
	}
}

func TestExplain_OutputFormatsPrintTheTraceAsIs(t *testing.T) {
	srv, _ := startWithTraces(t)
	createDeletingNamespace(t, srv)
	want := api.Trace{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindTrace}, Object: nsRef, Reconciles: []api.TraceReconcile{}}
	for _, format := range []string{"json", "yaml"} {
		r := clitest.Run(t, srv.Config(), "explain", "namespace/demo", "-o", format)
		if r.Error != nil {
			t.Fatalf("-o %s: %v %s", format, r.Error, r.Err)
		}
		var got api.Trace
		if err := yaml.Unmarshal([]byte(r.Out), &got); err != nil { // YAML is a superset of JSON
			t.Fatalf("-o %s: %v\n%s", format, err, r.Out)
		}
		if got.TypeMeta != want.TypeMeta || got.Object != want.Object || got.Reconciles == nil || len(got.Reconciles) != 0 {
			t.Errorf("-o %s = %+v, want %+v", format, got, want)
		}
	}
	if r := clitest.Run(t, srv.Config(), "explain", "namespace/demo", "-o", "wide"); r.Error == nil || !strings.Contains(r.Err, "use json or yaml") {
		t.Errorf("-o wide: %v %q", r.Error, r.Err)
	}
}

func TestExplain_MissingObjectWithoutTraceIsNotFound(t *testing.T) {
	srv, _ := startWithTraces(t)
	r := clitest.Run(t, srv.Config(), "explain", "secret/missing")
	if !errors.Is(r.Error, api.ErrNotFound) || !strings.Contains(r.Err, `"missing" not found`) {
		t.Errorf("explain of a missing object: %v %q (out %q)", r.Error, r.Err, r.Out)
	}
	r = clitest.Run(t, srv.Config(), "explain", "gizmo/x")
	if r.Error == nil || !strings.Contains(r.Err, `unknown kind "gizmo"`) {
		t.Errorf("explain of an unknown kind: %v %q", r.Error, r.Err)
	}
}
