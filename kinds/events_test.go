package kinds_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/server/servertest"
)

func validProject() api.ProjectSpec {
	return api.ProjectSpec{
		WorkerTemplate:       api.WorkerSpec{Command: []string{"sh", "-c", "true"}, Env: map[string]string{"A": "1"}, Workspace: "src", Timeout: &api.Duration{Duration: time.Minute}},
		WorkerPermissions:    []api.PermissionRule{{Kinds: []string{"Installation"}, Verbs: []string{"get", "create"}}},
		EventSubscriptions:   []api.EventSubscription{{Source: "github", Types: []string{"push"}, Labels: map[string]string{"team": "a"}}},
		Secrets:              []string{"db"},
		MaxConcurrentWorkers: 2, MaxConcurrentJobs: 3,
	}
}

func TestProject_EveryFieldIsValidatedAtAdmission(t *testing.T) {
	s := servertest.Start(t)
	projects := client.For[*api.Project](s.Client(t))
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		mutate  func(p *api.ProjectSpec)
		invalid string // the field the 422 names; "" when valid
	}{
		{name: "valid", mutate: func(*api.ProjectSpec) {}},
		{name: "no command", mutate: func(p *api.ProjectSpec) { p.WorkerTemplate.Command = nil }, invalid: "spec.workerTemplate.command"},
		{name: "empty argv0", mutate: func(p *api.ProjectSpec) { p.WorkerTemplate.Command = []string{""} }, invalid: "spec.workerTemplate.command[0]"},
		{name: "bad env name", mutate: func(p *api.ProjectSpec) { p.WorkerTemplate.Env = map[string]string{"1X": "v"} }, invalid: "spec.workerTemplate.env[1X]"},
		{name: "reserved env", mutate: func(p *api.ProjectSpec) { p.WorkerTemplate.Env = map[string]string{"CAIRN_TOKEN": "v"} }, invalid: "spec.workerTemplate.env[CAIRN_TOKEN]"},
		{name: "workspace escapes", mutate: func(p *api.ProjectSpec) { p.WorkerTemplate.Workspace = "../x" }, invalid: "spec.workerTemplate.workspace"},
		{name: "absolute workspace", mutate: func(p *api.ProjectSpec) { p.WorkerTemplate.Workspace = "/etc" }, invalid: "spec.workerTemplate.workspace"},
		{name: "zero timeout", mutate: func(p *api.ProjectSpec) { p.WorkerTemplate.Timeout = &api.Duration{} }, invalid: "spec.workerTemplate.timeout"},
		{name: "rule without kinds", mutate: func(p *api.ProjectSpec) { p.WorkerPermissions[0].Kinds = nil }, invalid: "spec.workerPermissions[0].kinds"},
		{name: "rule on namespaces", mutate: func(p *api.ProjectSpec) { p.WorkerPermissions[0].Kinds = []string{"Namespace"} }, invalid: "spec.workerPermissions[0].kinds[0]"},
		{name: "bad kind name", mutate: func(p *api.ProjectSpec) { p.WorkerPermissions[0].Kinds = []string{"installations"} }, invalid: "spec.workerPermissions[0].kinds[0]"},
		{name: "unknown verb", mutate: func(p *api.ProjectSpec) { p.WorkerPermissions[0].Verbs = []string{"escalate"} }, invalid: "spec.workerPermissions[0].verbs[0]"},
		{name: "rule without verbs", mutate: func(p *api.ProjectSpec) { p.WorkerPermissions[0].Verbs = nil }, invalid: "spec.workerPermissions[0].verbs"},
		{name: "subscription without source", mutate: func(p *api.ProjectSpec) { p.EventSubscriptions[0].Source = "" }, invalid: "spec.eventSubscriptions[0].source"},
		{name: "subscription without types", mutate: func(p *api.ProjectSpec) { p.EventSubscriptions[0].Types = nil }, invalid: "spec.eventSubscriptions[0].types"},
		{name: "bad subscription label", mutate: func(p *api.ProjectSpec) { p.EventSubscriptions[0].Labels = map[string]string{"a b": "c"} }, invalid: "spec.eventSubscriptions[0].labels[a b]"},
		{name: "bad qualifier value", mutate: func(p *api.ProjectSpec) { p.EventSubscriptions[0].Qualifiers = map[string]string{"repo": "a\tb"} }, invalid: "spec.eventSubscriptions[0].qualifiers[repo]"},
		{name: "bad secret name", mutate: func(p *api.ProjectSpec) { p.Secrets = []string{"Db"} }, invalid: "spec.secrets[0]"},
		{name: "duplicate secret", mutate: func(p *api.ProjectSpec) { p.Secrets = []string{"db", "db"} }, invalid: "spec.secrets[1]"},
		{name: "negative workers", mutate: func(p *api.ProjectSpec) { p.MaxConcurrentWorkers = -1 }, invalid: "spec.maxConcurrentWorkers"},
		{name: "huge jobs", mutate: func(p *api.ProjectSpec) { p.MaxConcurrentJobs = 1 << 20 }, invalid: "spec.maxConcurrentJobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := validProject()
			tc.mutate(&spec)
			name := strings.ReplaceAll(tc.name, " ", "-")
			_, err := projects.Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: name, Namespace: "default"}, Spec: spec})
			if tc.invalid == "" {
				if err != nil {
					t.Fatalf("create: %v", err)
				}
				return
			}
			if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.invalid) {
				t.Fatalf("create = %v, want Invalid naming %s", err, tc.invalid)
			}
		})
	}
}

func TestEvent_CreateCopiesTheTemplateAndValidatesEveryField(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	if _, err := client.For[*api.Project](c).Create(ctx, &api.Project{ObjectMeta: api.ObjectMeta{Name: "shop", Namespace: "default"}, Spec: validProject()}); err != nil {
		t.Fatal(err)
	}
	events := client.For[*api.Event](c)
	valid := func() api.EventSpec { return api.EventSpec{Project: "shop", Source: "github", Type: "push"} }
	for _, tc := range []struct {
		name    string
		mutate  func(e *api.EventSpec)
		invalid string
	}{
		{name: "valid", mutate: func(*api.EventSpec) {}},
		{name: "no project", mutate: func(e *api.EventSpec) { e.Project = "" }, invalid: "spec.project"},
		{name: "unknown project", mutate: func(e *api.EventSpec) { e.Project = "nope" }, invalid: "spec.project"},
		{name: "bad project name", mutate: func(e *api.EventSpec) { e.Project = "Shop" }, invalid: "spec.project"},
		{name: "no source", mutate: func(e *api.EventSpec) { e.Source = "" }, invalid: "spec.source"},
		{name: "no type", mutate: func(e *api.EventSpec) { e.Type = "" }, invalid: "spec.type"},
		{name: "star type", mutate: func(e *api.EventSpec) { e.Type = "*" }, invalid: "spec.type"},
		{name: "bad label", mutate: func(e *api.EventSpec) { e.Labels = map[string]string{"-x": "y"} }, invalid: "spec.labels[-x]"},
		{name: "bad qualifier", mutate: func(e *api.EventSpec) { e.Qualifiers = map[string]string{"k": strings.Repeat("v", 256)} }, invalid: "spec.qualifiers[k]"},
		{name: "github values", mutate: func(e *api.EventSpec) {
			e.Qualifiers = map[string]string{"repo": "octo-org/hello.world"}
			e.Labels = map[string]string{"branch": "feature/login", "label": "needs review"}
		}},
		{name: "label value with a line break", mutate: func(e *api.EventSpec) { e.Labels = map[string]string{"branch": "a\nb"} }, invalid: "spec.labels[branch]"},
		{name: "payload too large", mutate: func(e *api.EventSpec) { e.Payload = strings.Repeat("p", 600<<10) }, invalid: "spec.payload"},
		{name: "long title", mutate: func(e *api.EventSpec) { e.ShortTitle = strings.Repeat("t", 300) }, invalid: "spec.shortTitle"},
		{name: "own worker with bad env", mutate: func(e *api.EventSpec) {
			e.Worker = api.WorkerSpec{Command: []string{"true"}, Env: map[string]string{"CAIRN_X": "1"}}
		}, invalid: "spec.worker.env[CAIRN_X]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := valid()
			tc.mutate(&spec)
			got, err := events.Create(ctx, &api.Event{ObjectMeta: api.ObjectMeta{GenerateName: "ev-", Namespace: "default"}, Spec: spec})
			if tc.invalid != "" {
				if !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.invalid) {
					t.Fatalf("create = %v, want Invalid naming %s", err, tc.invalid)
				}
				return
			}
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if got.Status.Worker.Phase != api.PhasePending {
				t.Errorf("worker phase = %q, want PENDING", got.Status.Worker.Phase)
			}
			if strings.Join(got.Spec.Worker.Command, " ") != "sh -c true" || got.Spec.Worker.Workspace != "src" {
				t.Errorf("worker = %+v, want the project's template", got.Spec.Worker)
			}
		})
	}
}

func TestEvent_StatusMovesOnlyAlongTheSeedsTransitions(t *testing.T) {
	s := servertest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	events := client.For[*api.Event](c)
	job := func(name string, phase api.EventPhase) api.JobStatus {
		return api.JobStatus{Name: name, Spec: api.WorkerSpec{Command: []string{"true"}}, Phase: phase}
	}
	for _, tc := range []struct {
		name  string
		path  []api.EventStatus // applied in order from PENDING; all but the last succeed
		want  error             // the error of the last write; nil when it succeeds
		field string
	}{
		{name: "claim, run, succeed", path: []api.EventStatus{
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}},
			{Worker: api.WorkerStatus{Phase: api.PhaseRunning}},
			{Worker: api.WorkerStatus{Phase: api.PhaseSucceeded}}}},
		{name: "pending cannot succeed", path: []api.EventStatus{{Worker: api.WorkerStatus{Phase: api.PhaseSucceeded}}},
			want: api.ErrInvalid, field: "status.worker.phase"},
		{name: "pending cannot abort", path: []api.EventStatus{{Worker: api.WorkerStatus{Phase: api.PhaseAborted}}},
			want: api.ErrInvalid, field: "status.worker.phase"},
		{name: "running cannot go back to pending", path: []api.EventStatus{
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}},
			{Worker: api.WorkerStatus{Phase: api.PhaseRunning}},
			{Worker: api.WorkerStatus{Phase: api.PhasePending}}}, want: api.ErrInvalid, field: "status.worker.phase"},
		{name: "terminal never changes: 409", path: []api.EventStatus{
			{Worker: api.WorkerStatus{Phase: api.PhaseCanceled}},
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}}}, want: api.ErrConflict},
		{name: "unknown phase", path: []api.EventStatus{{Worker: api.WorkerStatus{Phase: "DONE"}}},
			want: api.ErrInvalid, field: "status.worker.phase"},
		{name: "a new job starts pending", path: []api.EventStatus{
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}},
			{Worker: api.WorkerStatus{Phase: api.PhaseRunning}, Jobs: []api.JobStatus{job("a", api.PhaseRunning)}}},
			want: api.ErrInvalid, field: "status.jobs[0].phase"},
		{name: "jobs are never removed", path: []api.EventStatus{
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}, Jobs: []api.JobStatus{job("a", api.PhasePending)}},
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}}}, want: api.ErrInvalid, field: "status.jobs"},
		{name: "a job runs and fails", path: []api.EventStatus{
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}, Jobs: []api.JobStatus{job("a", api.PhasePending)}},
			{Worker: api.WorkerStatus{Phase: api.PhaseRunning}, Jobs: []api.JobStatus{job("a", api.PhaseStarting)}},
			{Worker: api.WorkerStatus{Phase: api.PhaseRunning}, Jobs: []api.JobStatus{job("a", api.PhaseFailed)}}}},
		{name: "a terminal job never changes: 409", path: []api.EventStatus{
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}, Jobs: []api.JobStatus{job("a", api.PhasePending)}},
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}, Jobs: []api.JobStatus{job("a", api.PhaseCanceled)}},
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}, Jobs: []api.JobStatus{job("a", api.PhaseStarting)}}}, want: api.ErrConflict},
		{name: "duplicate job names", path: []api.EventStatus{
			{Worker: api.WorkerStatus{Phase: api.PhaseStarting}, Jobs: []api.JobStatus{job("a", api.PhasePending), job("a", api.PhasePending)}}},
			want: api.ErrInvalid, field: "status.jobs[1].name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := events.Create(ctx, &api.Event{ObjectMeta: api.ObjectMeta{GenerateName: "ev-", Namespace: "default"},
				Spec: api.EventSpec{Project: "p", Source: "s", Type: "t", Worker: api.WorkerSpec{Command: []string{"true"}}}})
			if err != nil {
				t.Fatal(err)
			}
			for i, st := range tc.path {
				ev.Status = st
				next, err := events.UpdateStatus(ctx, ev)
				if i < len(tc.path)-1 || tc.want == nil {
					if err != nil {
						t.Fatalf("step %d (%s): %v", i, st.Worker.Phase, err)
					}
					ev = next
					continue
				}
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.field) {
					t.Fatalf("last step = %v, want %v naming %q", err, tc.want, tc.field)
				}
			}
		})
	}
}

func TestEvent_SpecNeverChanges(t *testing.T) {
	s := servertest.Start(t)
	events := client.For[*api.Event](s.Client(t))
	ctx := context.Background()
	ev, err := events.Create(ctx, &api.Event{ObjectMeta: api.ObjectMeta{Name: "e", Namespace: "default"},
		Spec: api.EventSpec{Project: "p", Source: "s", Type: "t", Worker: api.WorkerSpec{Command: []string{"true"}}}})
	if err != nil {
		t.Fatal(err)
	}
	changed := *ev
	changed.Spec.Type = "other"
	if _, err := events.Update(ctx, &changed); !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), "spec") {
		t.Fatalf("update of the spec = %v, want Invalid naming spec", err)
	}
}
