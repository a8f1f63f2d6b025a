package kinds

import (
	"context"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/registry"
)

// Bounds of the event kinds' fields.
const (
	maxArgs          = 256
	maxArgBytes      = 4096
	maxEnv           = 256
	maxConcurrency   = 10000
	maxPayloadBytes  = 512 << 10
	maxShortTitle    = 256
	maxSourceBytes   = 253
	maxJobs          = 100
	maxSubscriptions = 100
	maxRules         = 64
)

// permissionVerbs are the verbs a project may grant its workers' tokens.
// run (on DeployItem only) lets them create deploy items that run a
// command on a host.
var permissionVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "run"}

var (
	servedOnce sync.Once
	served     map[string]bool
)

// servedKinds are the names of the kinds All serves (→ namespaced),
// computed once and only read after.
func servedKinds() map[string]bool {
	servedOnce.Do(func() {
		served = map[string]bool{}
		for _, k := range All(Deps{}) {
			served[k.Kind] = k.Namespaced
		}
	})
	return served
}

// envName is what an environment variable name may look like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// kindName is what a kind name may look like.
var kindName = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// Project defines the Project kind: every field of its spec is checked at
// admission (the worker template, permissions, subscriptions, secrets and
// concurrency limits), each error naming its field.
func Project() registry.Kind {
	return registry.Define(registry.Spec[*api.Project]{
		Kind: api.KindProject, Namespaced: true, ShortNames: []string{"proj"}, Fields: []string{"spec"},
		Columns: []api.Column{
			{Name: "WORKERS", Path: ".spec.maxConcurrentWorkers"},
			{Name: "JOBS", Path: ".spec.maxConcurrentJobs"},
			age,
		},
		Validate: func(_ context.Context, _ *registry.Admission, p *api.Project) field.ErrorList {
			return ValidateProjectSpec(&p.Spec, field.NewPath("spec"))
		},
		Acts: actsOfProject,
	})
}

// ValidateProjectSpec checks every field of a project's spec.
func ValidateProjectSpec(s *api.ProjectSpec, p *field.Path) field.ErrorList {
	errs := ValidateWorkerSpec(&s.WorkerTemplate, p.Child("workerTemplate"))
	if len(s.WorkerPermissions) > maxRules {
		errs = append(errs, field.TooMany(p.Child("workerPermissions"), len(s.WorkerPermissions), maxRules))
	}
	for i, r := range s.WorkerPermissions {
		rp := p.Child("workerPermissions").Index(i)
		if len(r.Kinds) == 0 {
			errs = append(errs, field.Required(rp.Child("kinds"), "name at least one kind"))
		}
		for j, k := range r.Kinds {
			_, served := servedKinds()[k]
			switch {
			case !kindName.MatchString(k):
				errs = append(errs, field.Invalid(rp.Child("kinds").Index(j), k, "must be a kind name such as Installation"))
			case api.Ungrantable(k) != "":
				errs = append(errs, field.Forbidden(rp.Child("kinds").Index(j), k+": "+api.Ungrantable(k)))
			case !served:
				errs = append(errs, field.NotSupported(rp.Child("kinds").Index(j), k, grantableKinds()))
			case k != api.KindDeployItem && slices.Contains(r.Verbs, authz.VerbRun):
				errs = append(errs, field.Invalid(rp.Child("kinds").Index(j), k, "run is granted on DeployItem only (the deploy items that run a command)"))
			}
		}
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(rp.Child("verbs"), "name at least one verb"))
		}
		for j, v := range r.Verbs {
			if !slices.Contains(permissionVerbs, v) {
				errs = append(errs, field.NotSupported(rp.Child("verbs").Index(j), v, permissionVerbs))
			}
		}
	}
	if len(s.EventSubscriptions) > maxSubscriptions {
		errs = append(errs, field.TooMany(p.Child("eventSubscriptions"), len(s.EventSubscriptions), maxSubscriptions))
	}
	for i, sub := range s.EventSubscriptions {
		sp := p.Child("eventSubscriptions").Index(i)
		errs = append(errs, validateSource(sub.Source, sp.Child("source"))...)
		if len(sub.Types) == 0 {
			errs = append(errs, field.Required(sp.Child("types"), `list the event types, or "*" for every type`))
		}
		for j, t := range sub.Types {
			errs = append(errs, validateSource(t, sp.Child("types").Index(j))...)
		}
		errs = append(errs, validateLabelMap(sub.Qualifiers, sp.Child("qualifiers"))...)
		errs = append(errs, validateLabelMap(sub.Labels, sp.Child("labels"))...)
	}
	seen := map[string]bool{}
	for i, name := range s.Secrets {
		fp := p.Child("secrets").Index(i)
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(fp, name, msg))
		}
		if seen[name] {
			errs = append(errs, field.Duplicate(fp, name))
		}
		seen[name] = true
	}
	errs = append(errs, validateLimit(s.MaxConcurrentWorkers, p.Child("maxConcurrentWorkers"))...)
	errs = append(errs, validateLimit(s.MaxConcurrentJobs, p.Child("maxConcurrentJobs"))...)
	return errs
}

func validateLimit(n int, p *field.Path) field.ErrorList {
	if n < 0 || n > maxConcurrency {
		return field.ErrorList{field.Invalid(p, n, fmt.Sprintf("must be between 0 (no limit of its own) and %d", maxConcurrency))}
	}
	return nil
}

func validateSource(s string, p *field.Path) field.ErrorList {
	switch {
	case s == "":
		return field.ErrorList{field.Required(p, "")}
	case len(s) > maxSourceBytes:
		return field.ErrorList{field.TooLong(p, "", maxSourceBytes)}
	case strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return field.ErrorList{field.Invalid(p, s, "must not contain control characters")}
	}
	return nil
}

// validateLabelMap checks an event's (or a subscription's) qualifiers or
// labels: keys are qualified names, values eventValues.
func validateLabelMap(m map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(m)) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p.Key(k), k, msg))
		}
		if msg := eventValue(m[k]); msg != "" {
			errs = append(errs, field.Invalid(p.Key(k), m[k], msg))
		}
	}
	return errs
}

// ValidateWorkerSpec checks how a worker or a job runs: a command (argv),
// environment variable names (CAIRN_ ones are the runtime's), a relative
// workspace directory and a positive timeout.
func ValidateWorkerSpec(w *api.WorkerSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case len(w.Command) == 0:
		errs = append(errs, field.Required(p.Child("command"), "the argv the worker runs, e.g. [sh, -c, ...]"))
	case len(w.Command) > maxArgs:
		errs = append(errs, field.TooMany(p.Child("command"), len(w.Command), maxArgs))
	case w.Command[0] == "":
		errs = append(errs, field.Required(p.Child("command").Index(0), "the command to run"))
	}
	for i, a := range w.Command {
		if len(a) > maxArgBytes {
			errs = append(errs, field.TooLong(p.Child("command").Index(i), "", maxArgBytes))
		}
		if strings.ContainsRune(a, 0) {
			errs = append(errs, field.Invalid(p.Child("command").Index(i), "", "must not contain NUL"))
		}
	}
	if len(w.Image) > 512 {
		errs = append(errs, field.TooLong(p.Child("image"), "", 512))
	}
	if len(w.Env) > maxEnv {
		errs = append(errs, field.TooMany(p.Child("env"), len(w.Env), maxEnv))
	}
	for _, k := range slices.Sorted(maps.Keys(w.Env)) {
		switch {
		case !envName.MatchString(k):
			errs = append(errs, field.Invalid(p.Child("env").Key(k), k, "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)"))
		case strings.HasPrefix(k, "CAIRN_"):
			errs = append(errs, field.Forbidden(p.Child("env").Key(k), "CAIRN_ variables are set by the runtime"))
		}
		if strings.ContainsRune(w.Env[k], 0) || len(w.Env[k]) > maxArgBytes {
			errs = append(errs, field.Invalid(p.Child("env").Key(k), "", fmt.Sprintf("must be at most %d bytes without NUL", maxArgBytes)))
		}
	}
	if w.Workspace != "" {
		clean := path.Clean(w.Workspace)
		if path.IsAbs(w.Workspace) || clean == ".." || strings.HasPrefix(clean, "../") {
			errs = append(errs, field.Invalid(p.Child("workspace"), w.Workspace, "must be a relative path inside the workspace"))
		}
	}
	if w.Timeout != nil && w.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("timeout"), w.Timeout.String(), "must be positive"))
	}
	return errs
}

// Event defines the Event kind. A new Event gets its project's worker
// template (when it names no worker of its own) and a PENDING worker; its
// spec never changes; its status changes only as the seed's transitions
// allow (api.Transition), whoever writes it: a write to a terminal worker
// is a Conflict, any other refused transition Invalid.
func Event() registry.Kind { return EventWith(nil) }

// EventWith defines the Event kind with the event endpoints (cancel, jobs,
// logs, the collection's create, cancel and delete) served by actions.
func EventWith(actions []registry.Action) registry.Kind { return eventKind(actions, nil) }

// eventKind is EventWith whose removals also remove what remove says: the
// event's system records (its secrets and token registrations).
func eventKind(actions []registry.Action, remove registry.RemoveHook) registry.Kind {
	return registry.Define(registry.Spec[*api.Event]{
		Kind: api.KindEvent, Namespaced: true, ShortNames: []string{"ev"}, Fields: []string{"spec", "status"},
		Columns: []api.Column{
			{Name: "PROJECT", Path: ".spec.project"},
			{Name: "SOURCE", Path: ".spec.source"},
			{Name: "TYPE", Path: ".spec.type"},
			{Name: "WORKER", Path: ".status.worker.phase"},
			{Name: "JOBS", Path: ".status.jobPhases"},
			age,
		},
		Actions:      actions,
		RemoveWrites: remove,
		PrepareForCreate: func(ctx context.Context, adm *registry.Admission, ev *api.Event) error {
			if ev.Spec.Project != "" && len(ev.Spec.Worker.Command) == 0 {
				obj, err := adm.Get.Get(ctx, api.KindProject, ev.Namespace, ev.Spec.Project)
				if err != nil {
					if api.AsStatus(err).Reason == api.ReasonNotFound {
						return api.NewInvalid(api.KindEvent, ev.Name, field.ErrorList{field.NotFound(field.NewPath("spec", "project"), ev.Spec.Project)})
					}
					return err
				}
				var p api.Project
				if err := obj.Into(&p); err != nil {
					return fmt.Errorf("kinds: stored project %q does not decode: %w", ev.Spec.Project, err)
				}
				ev.Spec.Worker = *p.Spec.WorkerTemplate.DeepCopy()
			}
			ev.Status = api.EventStatus{Worker: api.WorkerStatus{Phase: api.PhasePending}}
			return nil
		},
		Validate: func(_ context.Context, _ *registry.Admission, ev *api.Event) field.ErrorList {
			return validateEvent(ev)
		},
		ValidateUpdate: func(_ context.Context, _ *registry.Admission, ev, old *api.Event) field.ErrorList {
			var errs field.ErrorList
			if !specEqual(&ev.Spec, &old.Spec) {
				errs = append(errs, field.Forbidden(field.NewPath("spec"), "an event's spec never changes"))
			}
			return errs
		},
		ValidateStatus: func(_ context.Context, _ *registry.Admission, ev *api.Event) field.ErrorList {
			return validateEventStatus(&ev.Status, field.NewPath("status"))
		},
		PrepareForStatusUpdate: func(_ context.Context, _ *registry.Admission, ev, old *api.Event) error {
			if err := checkTransitions(ev, old); err != nil {
				return err
			}
			ev.Status.JobPhases = api.SummarizeJobs(ev.Status.Jobs)
			return nil
		},
	})
}

func validateEvent(ev *api.Event) field.ErrorList {
	p := field.NewPath("spec")
	var errs field.ErrorList
	if ev.Spec.Project == "" {
		errs = append(errs, field.Required(p.Child("project"), "the project the event is for"))
	} else {
		for _, msg := range validation.IsDNS1123Label(ev.Spec.Project) {
			errs = append(errs, field.Invalid(p.Child("project"), ev.Spec.Project, msg))
		}
	}
	errs = append(errs, validateSource(ev.Spec.Source, p.Child("source"))...)
	errs = append(errs, validateSource(ev.Spec.Type, p.Child("type"))...)
	if ev.Spec.Type == "*" {
		errs = append(errs, field.Invalid(p.Child("type"), "*", `"*" matches every type in subscriptions; an event has one type`))
	}
	errs = append(errs, validateLabelMap(ev.Spec.Qualifiers, p.Child("qualifiers"))...)
	errs = append(errs, validateLabelMap(ev.Spec.Labels, p.Child("labels"))...)
	if len(ev.Spec.Payload) > maxPayloadBytes {
		errs = append(errs, field.TooLong(p.Child("payload"), "", maxPayloadBytes))
	}
	if len(ev.Spec.ShortTitle) > maxShortTitle {
		errs = append(errs, field.TooLong(p.Child("shortTitle"), "", maxShortTitle))
	}
	errs = append(errs, ValidateWorkerSpec(&ev.Spec.Worker, p.Child("worker"))...)
	return append(errs, validateEventStatus(&ev.Status, field.NewPath("status"))...)
}

func validateEventStatus(s *api.EventStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !s.Worker.Phase.Known() {
		errs = append(errs, field.NotSupported(p.Child("worker", "phase"), s.Worker.Phase, phaseNames()))
	}
	if len(s.Jobs) > maxJobs {
		errs = append(errs, field.TooMany(p.Child("jobs"), len(s.Jobs), maxJobs))
	}
	seen := map[string]bool{}
	for i, j := range s.Jobs {
		jp := p.Child("jobs").Index(i)
		for _, msg := range validation.IsDNS1123Label(j.Name) {
			errs = append(errs, field.Invalid(jp.Child("name"), j.Name, msg))
		}
		if len(j.Name) > 40 {
			errs = append(errs, field.TooLong(jp.Child("name"), j.Name, 40))
		}
		if seen[j.Name] {
			errs = append(errs, field.Duplicate(jp.Child("name"), j.Name))
		}
		seen[j.Name] = true
		if !j.Phase.Known() {
			errs = append(errs, field.NotSupported(jp.Child("phase"), j.Phase, phaseNames()))
		}
		errs = append(errs, ValidateWorkerSpec(&j.Spec, jp.Child("spec"))...)
	}
	return errs
}

func phaseNames() []string {
	out := make([]string, len(api.EventPhases))
	for i, p := range api.EventPhases {
		out[i] = string(p)
	}
	return out
}

// checkTransitions allows a status write only along api.Transition, for
// the worker and for each job: a job is never removed, renamed or
// respecified, and a new job starts PENDING. A write that would move a
// terminal worker or job is a Conflict (it is already terminal); any other
// refused move is Invalid, naming the field.
func checkTransitions(ev, old *api.Event) error {
	p := field.NewPath("status")
	from, to := old.Status.Worker.Phase, ev.Status.Worker.Phase
	if from.Terminal() && from != to {
		return api.NewConflict(api.KindEvent, ev.Name, fmt.Sprintf("the worker is already %s: a terminal phase never changes", from))
	}
	var errs field.ErrorList
	if !api.Transition(from, to) {
		errs = append(errs, field.Invalid(p.Child("worker", "phase"), to, fmt.Sprintf("a worker cannot go from %s to %s", from, to)))
	}
	if len(ev.Status.Jobs) < len(old.Status.Jobs) {
		errs = append(errs, field.Forbidden(p.Child("jobs"), "jobs are never removed"))
	}
	for i, j := range ev.Status.Jobs {
		jp := p.Child("jobs").Index(i)
		if i >= len(old.Status.Jobs) {
			if j.Phase != api.PhasePending {
				errs = append(errs, field.Invalid(jp.Child("phase"), j.Phase, "a new job starts PENDING"))
			}
			continue
		}
		o := old.Status.Jobs[i]
		if j.Name != o.Name {
			errs = append(errs, field.Forbidden(jp.Child("name"), "jobs are never renamed nor reordered"))
			continue
		}
		if !workerSpecEqual(&j.Spec, &o.Spec) {
			errs = append(errs, field.Forbidden(jp.Child("spec"), "a job's spec never changes"))
		}
		if o.Phase.Terminal() && o.Phase != j.Phase {
			return api.NewConflict(api.KindEvent, ev.Name, fmt.Sprintf("job %s is already %s: a terminal phase never changes", o.Name, o.Phase))
		}
		if !api.Transition(o.Phase, j.Phase) {
			errs = append(errs, field.Invalid(jp.Child("phase"), j.Phase, fmt.Sprintf("a job cannot go from %s to %s", o.Phase, j.Phase)))
		}
	}
	if len(errs) > 0 {
		return api.NewInvalid(api.KindEvent, ev.Name, errs)
	}
	return nil
}

func specEqual(a, b *api.EventSpec) bool {
	return a.Project == b.Project && a.Source == b.Source && a.Type == b.Type &&
		maps.Equal(a.Qualifiers, b.Qualifiers) && maps.Equal(a.Labels, b.Labels) &&
		a.Payload == b.Payload && a.ShortTitle == b.ShortTitle && workerSpecEqual(&a.Worker, &b.Worker)
}

func workerSpecEqual(a, b *api.WorkerSpec) bool {
	ta, tb := a.Timeout, b.Timeout
	return slices.Equal(a.Command, b.Command) && a.Image == b.Image && maps.Equal(a.Env, b.Env) &&
		a.Workspace == b.Workspace && (ta == nil) == (tb == nil) && (ta == nil || ta.Duration == tb.Duration)
}

// grantableKinds are the kinds a project may grant, sorted.
func grantableKinds() []string {
	var out []string
	for k := range servedKinds() {
		if api.Ungrantable(k) == "" {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
