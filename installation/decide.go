// Package installation is the Installation controller: it renders an
// installation's blueprint into an Execution and nested Installations,
// publishes its exports as DataObjects and Targets and triggers the
// installations that import them, following the Landscaper reconciliation flow (core logic,
// standard reconcile, force reconcile, deletion) step by step.
//
// The decisions are plain functions over plain data (this file, and the
// steps of the standard and deletion flows in steps.go and
// steps_force.go, with table tests walking the seed's steps); the
// Reconciler around them only reads (the shared informer caches, and
// Secrets through the API), calls them and carries out the Step they
// return through the API client. It is level-based: every reconcile re-reads the installation
// and everything around it and acts on the difference.
package installation

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"cairn.dev/cairn/api"
)

// Flow is what the core reconciliation logic decides to do with an
// installation (the seed's "Core Reconciliation Logic").
type Flow string

// The outcomes of Core, in the order of the seed's steps.
const (
	// FlowIgnore: step 1, a final phase and the ignore annotation.
	FlowIgnore Flow = "ignore"
	// FlowAddFinalizer: step 2, the finalizer is added and nothing else.
	FlowAddFinalizer Flow = "add-finalizer"
	// FlowDelete: step 3, the deletion flow.
	FlowDelete Flow = "delete"
	// FlowForce: step 4, the force-reconcile annotation.
	FlowForce Flow = "force-reconcile"
	// FlowStandard: step 4 (the reconcile or abort annotation) or step 6.
	FlowStandard Flow = "standard"
	// FlowNestedCheck: step 5, a final, unmodified installation only
	// checks its nested installations and execution.
	FlowNestedCheck Flow = "nested-check"
)

// Core decides the flow for inst (steps 1 to 6 of the core logic).
func Core(inst *api.Installation) Flow {
	op := inst.Annotations[api.AnnotationOperation]
	switch {
	case inst.Status.Phase.Final() && inst.Annotations[api.AnnotationIgnore] == "true":
		return FlowIgnore
	case !inst.Deleting() && !inst.HasFinalizer(api.FinalizerInstallation):
		return FlowAddFinalizer
	case inst.Deleting():
		return FlowDelete
	case op == api.OperationForceReconcile:
		return FlowForce
	case op == api.OperationReconcile || op == api.OperationAbort:
		return FlowStandard
	case inst.Status.Phase.Final() && inst.Status.ObservedGeneration == inst.Generation:
		return FlowNestedCheck
	}
	return FlowStandard
}

// Nested is the state of one nested object (the execution or a nested
// installation) as the combined phase sees it.
type Nested struct {
	Kind, Name string
	// Phase is the object's phase mapped to an installation phase.
	Phase api.InstallationPhase
	// Reason says why the phase is not final or is Failed (for traces and
	// lastError), e.g. "deploy item db: exit status 1".
	Reason string
}

// ExecutionState maps an Execution to its place in the combined phase: an
// execution whose status is not up to date, or that carries an operation
// annotation, is still in work. A deleting execution is in work until its
// deletion failed (its lastError says DeletionFailed): a Failed phase left
// from its deploy is no failure of the deletion.
func ExecutionState(e *api.Execution) Nested {
	n := Nested{Kind: api.KindExecution, Name: e.Name}
	switch {
	case e.Deleting() && !(e.Status.Phase == api.DeployFailed && deletionFailed(e.Status.LastError)):
		n.Phase, n.Reason = api.InstallationProgressing, "deleting"
	case e.Status.ObservedGeneration != e.Generation:
		n.Phase, n.Reason = api.InstallationProgressing, fmt.Sprintf("generation %d not observed yet", e.Generation)
	case e.Annotations[api.AnnotationOperation] != "":
		n.Phase, n.Reason = api.InstallationProgressing, "queued for "+e.Annotations[api.AnnotationOperation]
	case e.Status.Phase == api.DeploySucceeded:
		n.Phase = api.InstallationSucceeded
	case e.Status.Phase == api.DeployFailed:
		n.Phase = api.InstallationFailed
		if e.Status.LastError != nil {
			n.Reason = e.Status.LastError.Message
		}
	default:
		n.Phase, n.Reason = api.InstallationProgressing, "phase "+orNone(string(e.Status.Phase))
	}
	return n
}

// InstallationState maps a nested installation to its place in the
// combined phase, like ExecutionState.
func InstallationState(in *api.Installation) Nested {
	n := Nested{Kind: api.KindInstallation, Name: in.Name, Phase: in.Status.Phase}
	switch {
	case in.Deleting():
		n.Phase, n.Reason = api.InstallationProgressing, "deleting"
		if in.Status.Phase == api.InstallationFailed && deletionFailed(in.Status.LastError) {
			n.Phase = api.InstallationFailed
		}
	case in.Status.ObservedGeneration != in.Generation:
		n.Phase, n.Reason = api.InstallationProgressing, fmt.Sprintf("generation %d not observed yet", in.Generation)
	case in.Annotations[api.AnnotationOperation] != "":
		n.Phase, n.Reason = api.InstallationProgressing, "queued for "+in.Annotations[api.AnnotationOperation]
	case !in.Status.Phase.Final():
		n.Phase, n.Reason = api.InstallationProgressing, "phase "+orNone(string(in.Status.Phase))
	}
	if n.Phase == api.InstallationFailed && in.Status.LastError != nil {
		n.Reason = in.Status.LastError.Message
	}
	return n
}

// deletionFailed reports whether a nested object's lastError is the
// failure of its deletion.
func deletionFailed(le *api.LastError) bool {
	return le != nil && le.Reason == api.ReasonDeletionFailed
}

func orNone(s string) string {
	if s == "" {
		return "none yet"
	}
	return s
}

// Combined aggregates nested phases (standard step 1): "" when there is
// nothing nested; Progressing while anything is not final; else Failed if
// anything failed, Aborted if anything was aborted, else Succeeded. The
// Nested returned is the first that decided the phase (nil when all
// succeeded), for the reason.
func Combined(nested []Nested) (api.InstallationPhase, *Nested) {
	if len(nested) == 0 {
		return "", nil
	}
	for _, want := range []api.InstallationPhase{api.InstallationProgressing, api.InstallationFailed, api.InstallationAborted} {
		for i := range nested {
			p := nested[i].Phase
			if p == want || (want == api.InstallationProgressing && !p.Final()) {
				return want, &nested[i]
			}
		}
	}
	return api.InstallationSucceeded, nil
}

// Import is one resolved import of an installation: where it comes from and
// its generation, never more of its value than the reconciler needs to
// render (Value is never put into a status, a log, an error or a trace).
type Import struct {
	Name string
	// Source names where the value comes from, e.g. "value",
	// "secret/db-password", "dataobject/db-connection",
	// "parent/shop:password", "target/cluster".
	Source string
	// Exists is false when the source is missing.
	Exists bool
	// Generation identifies the value's version: an exporter's
	// configGeneration, or a hash of the value or of the object's version.
	Generation string
	// Exporters are the siblings that export the DataObject (dataRef
	// imports in a context).
	Exporters []string
	// Owner is the installation owning the DataObject, if any.
	Owner string
	// FromParent marks an import of one of the parent's imports.
	FromParent bool
	// Secret marks a value read from a Secret.
	Secret bool
	// Value is the JSON value (only when Exists).
	Value json.RawMessage
	// Template, when set, is what templates see instead of Value: a
	// Secret import's references (api.SecretReference), never its value.
	Template json.RawMessage
}

// Generations returns what to record in status.importGenerations.
func Generations(imps []Import) []api.ImportGeneration {
	out := make([]api.ImportGeneration, 0, len(imps))
	for _, im := range imps {
		out = append(out, api.ImportGeneration{Name: im.Name, Source: im.Source, Generation: im.Generation})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// UpdateRequired is standard step 4: whether the installation or any of
// its imports changed since the nested objects were last updated, or its
// Blueprint (bp, its version: "" for an inline one; compared only once
// recorded), or a failed (aborted) installation is asked to reconcile
// again. It returns why, for the trace ("" when no update is required).
func UpdateRequired(inst *api.Installation, imps []Import, bp string) string {
	if inst.Status.ObservedGeneration != inst.Generation {
		return fmt.Sprintf("generation %d is not observed (%d)", inst.Generation, inst.Status.ObservedGeneration)
	}
	old := map[string]api.ImportGeneration{}
	for _, g := range inst.Status.ImportGenerations {
		old[g.Name] = g
	}
	if len(old) != len(imps) {
		return "the set of imports changed"
	}
	for _, g := range Generations(imps) {
		if o, ok := old[g.Name]; !ok || o != g {
			return fmt.Sprintf("import %s changed (%s)", g.Name, g.Source)
		}
	}
	if why := blueprintChanged(inst, bp); why != "" {
		return why
	}
	if inst.Annotations[api.AnnotationOperation] == api.OperationReconcile &&
		(inst.Status.Phase == api.InstallationFailed || inst.Status.Phase == api.InstallationAborted) {
		return fmt.Sprintf("a %s installation is asked to reconcile again", inst.Status.Phase)
	}
	return ""
}

func blueprintChanged(inst *api.Installation, bp string) string {
	if rec := inst.Status.BlueprintGeneration; rec != "" && bp != "" && rec != bp {
		return fmt.Sprintf("Blueprint %s changed (%s, rendered from %s)", inst.Spec.Blueprint.Ref, bp, rec)
	}
	return ""
}

// InputsChanged is the part of core step 5 that cairn adds: whether an
// input of a final, unmodified installation changed since it last
// rendered its nested objects: an existing import whose source or
// generation is not the one recorded, or its Blueprint (bp, as in
// UpdateRequired). Imports that an installation publishes are left out:
// their exporter triggers its importers (standard step 6), and a parent
// its nested installations. What was never recorded is not compared, and
// an import that is gone is not a change (its absence undeploys nothing).
// An Aborted installation stays as it is until reconciled by hand. It
// returns why ("" when nothing changed).
func InputsChanged(inst *api.Installation, imps []Import, bp string) string {
	if inst.Status.Phase == api.InstallationAborted {
		return ""
	}
	cur := map[string]api.ImportGeneration{}
	for _, g := range Generations(imps) {
		cur[g.Name] = g
	}
	for i := range imps {
		if im := &imps[i]; !im.Exists || im.Owner != "" || im.FromParent {
			delete(cur, im.Name)
		}
	}
	for _, old := range inst.Status.ImportGenerations {
		if g, ok := cur[old.Name]; ok && g != old {
			return fmt.Sprintf("import %s changed (%s)", g.Name, g.Source)
		}
	}
	return blueprintChanged(inst, bp)
}

// Unsatisfied is the check shared by standard step 4.1 and force step 1:
// every import exists and, if an installation owns it, is imported by the
// parent or exported by a sibling. It returns one reason per unsatisfied
// import.
func Unsatisfied(imps []Import) []string {
	var out []string
	for _, im := range imps {
		switch {
		case !im.Exists && len(im.Exporters) > 0:
			out = append(out, fmt.Sprintf("import %s waits for sibling %s to export %s", im.Name, im.Exporters[0], im.Source))
		case !im.Exists:
			out = append(out, fmt.Sprintf("import %s: %s does not exist", im.Name, im.Source))
		case im.Owner != "" && !im.FromParent && !slices.Contains(im.Exporters, im.Owner):
			out = append(out, fmt.Sprintf("import %s: %s is owned by installation %s, which is neither the parent nor a sibling exporting it", im.Name, im.Source, im.Owner))
		}
	}
	return out
}

// Blocker is one reason why an installation cannot update its nested
// objects now: what it waits for, which stays the same while it waits
// (lastError says it, so that it is not rewritten whenever the awaited
// object moves), and the awaited object's state at this reconcile (the
// trace says it too), e.g. "import db waits for sibling database" and
// "Progressing".
type Blocker struct {
	Waits string
	State string
}

func (b Blocker) String() string {
	if b.State == "" {
		return b.Waits
	}
	return b.Waits + " (" + b.State + ")"
}

// JoinBlockers joins blockers with "; ", with their states (for the
// trace) or without (for lastError).
func JoinBlockers(bs []Blocker, withState bool) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = b.Waits
		if withState {
			parts[i] = b.String()
		}
	}
	return strings.Join(parts, "; ")
}

// Blockers is standard step 4.1: why the nested objects cannot be updated
// now (nil when they can). siblings are the installations of the same
// context by name; parent is nil for a root installation. An import that
// waits for a sibling is not also reported as missing: the sibling
// exports it when it succeeds.
func Blockers(parent *api.Installation, siblings map[string]*api.Installation, imps []Import) []Blocker {
	var out []Blocker
	seen := map[string]bool{}
	waiting := map[string]bool{}
	for _, im := range imps {
		for _, name := range im.Exporters {
			s, ok := siblings[name]
			if !ok {
				continue
			}
			waits := fmt.Sprintf("import %s waits for sibling %s", im.Name, name)
			var state string
			switch {
			case s.Status.Phase != api.InstallationSucceeded:
				state = orNone(string(s.Status.Phase))
			case s.Status.ObservedGeneration != s.Generation:
				state = fmt.Sprintf("generation %d not observed yet", s.Generation)
			case s.Annotations[api.AnnotationOperation] == api.OperationReconcile || s.Annotations[api.AnnotationOperation] == api.OperationForceReconcile:
				state = "queued for " + s.Annotations[api.AnnotationOperation]
			default:
				continue
			}
			waiting[im.Name] = true
			if !seen[name] {
				seen[name] = true
				out = append(out, Blocker{Waits: waits, State: state})
			}
		}
	}
	if parent != nil && parent.Status.Phase != api.InstallationProgressing {
		out = append(out, Blocker{Waits: fmt.Sprintf("parent %s is not Progressing", parent.Name), State: orNone(string(parent.Status.Phase))})
	}
	for _, im := range imps {
		if waiting[im.Name] {
			continue
		}
		for _, why := range Unsatisfied([]Import{im}) {
			out = append(out, Blocker{Waits: why})
		}
	}
	return out
}

// HasImported reports whether importer has already rendered with the
// exports exporter published as configGeneration gen: it recorded every
// import it takes from exporter's DataObjects and Targets at that
// generation. Standard step 6 does not trigger such an importer again
// (it ran with these exports already, e.g. because the exporter's status
// event reached it first). An importer that recorded none of them has
// not rendered with them.
func HasImported(importer, exporter *api.Installation, gen string) bool {
	ctx := contextOf(&exporter.ObjectMeta)
	sources := map[string]bool{}
	for _, e := range exporter.Spec.Exports.Data {
		sources["dataobject/"+DataObjectName(ctx, e.DataRef)] = true
	}
	for _, e := range exporter.Spec.Exports.Targets {
		sources["target/"+TargetName(ctx, e.Target)] = true
	}
	found := false
	for _, g := range importer.Status.ImportGenerations {
		if !sources[g.Source] {
			continue
		}
		if g.Generation != "config/"+gen {
			return false
		}
		found = true
	}
	return found
}

// SiblingImporters is deletion step 2: the live siblings that import a
// dataRef or a target inst exports, as "sibling X imports Y" ("imports
// target Y").
func SiblingImporters(inst *api.Installation, siblings []*api.Installation) []string {
	data, targets := map[string]bool{}, map[string]bool{}
	for _, e := range inst.Spec.Exports.Data {
		data[e.DataRef] = true
	}
	for _, e := range inst.Spec.Exports.Targets {
		targets[e.Target] = true
	}
	var out []string
	for _, s := range siblings {
		if s.Name == inst.Name {
			continue
		}
		for _, d := range s.Spec.Imports.Data {
			if d.DataRef != "" && data[d.DataRef] {
				out = append(out, fmt.Sprintf("sibling %s imports %s", s.Name, d.DataRef))
			}
		}
		for _, t := range s.Spec.Imports.Targets {
			if targets[t.Target] {
				out = append(out, fmt.Sprintf("sibling %s imports target %s", s.Name, t.Target))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TargetSpecOf checks the rendered value v of the export name, published
// as a Target, and returns the Target's spec: v must be an object with a
// non-empty string type and, optionally, a config (any JSON); a name (as
// a target import's value has) is ignored. declared is the type the
// blueprint declares the export with ("" when it does not declare it),
// which must not be data.
func TargetSpecOf(name, declared string, v json.RawMessage) (api.TargetSpec, error) {
	if declared == api.ParameterData {
		return api.TargetSpec{}, fmt.Errorf("export %q is published as a Target, but the blueprint declares it as data (type: target)", name)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(v, &fields); err != nil || fields == nil {
		return api.TargetSpec{}, fmt.Errorf("export %q is published as a Target: it must render an object {type, config}, not %s", name, clip(v))
	}
	var spec api.TargetSpec
	for k, raw := range fields {
		switch k {
		case "type":
			if json.Unmarshal(raw, &spec.Type) != nil {
				return api.TargetSpec{}, fmt.Errorf("export %q is published as a Target: its type must be a string, not %s", name, clip(raw))
			}
		case "config":
			if string(raw) != "null" {
				spec.Config = raw
			}
		case "name":
		default:
			return api.TargetSpec{}, fmt.Errorf("export %q is published as a Target: unknown field %q (a Target has type and config)", name, k)
		}
	}
	if spec.Type == "" {
		return api.TargetSpec{}, fmt.Errorf("export %q is published as a Target: its type is missing", name)
	}
	return spec, nil
}

// clip shortens a rendered value for an error message.
func clip(v json.RawMessage) string {
	const max = 60
	if len(v) <= max {
		return string(v)
	}
	return string(v[:max]) + "..."
}

// Retry is the automatic reconcile's decision for a root installation in
// a final phase (a step cairn adds after core step 5).
type Retry struct {
	// Now: add the reconcile annotation now.
	Now bool
	// After: check again after this delay (0: never).
	After time.Duration
	// Failed is true for a retry of a failure (counted), false for a
	// periodic reconcile of a success.
	Failed bool
}

// Defaults of automaticReconcile.
const (
	DefaultRetryInterval = time.Minute
	maxRetryBackoff      = time.Hour
)

// AutomaticReconcile decides when a root installation in a final phase is
// reconciled by itself: a Failed one after interval, doubling with each
// retry (at most an hour), at most maxRetries times (0: no bound), counted
// from the later of its last retry and last (its last error); a Succeeded
// one every succeededReconcile.interval from the later of its last retry
// and last (its last reconcile).
func AutomaticReconcile(inst *api.Installation, hasParent bool, last, now time.Time) Retry {
	ar := inst.Spec.AutomaticReconcile
	if ar == nil || hasParent {
		return Retry{}
	}
	st := inst.Status.AutomaticReconcile
	switch inst.Status.Phase {
	case api.InstallationFailed:
		f := ar.FailedReconcile
		if f == nil {
			return Retry{}
		}
		n := 0
		since := last
		if st != nil {
			n = st.FailedRetries
			if st.LastRetry.After(since) {
				since = st.LastRetry
			}
		}
		if f.MaxRetries > 0 && n >= f.MaxRetries {
			return Retry{}
		}
		d := DefaultRetryInterval
		if f.Interval != nil {
			d = f.Interval.Duration
		}
		for i := 0; i < n && d < maxRetryBackoff; i++ {
			d *= 2
		}
		d = min(d, maxRetryBackoff)
		if wait := since.Add(d).Sub(now); wait > 0 {
			return Retry{After: wait, Failed: true}
		}
		return Retry{Now: true, Failed: true}
	case api.InstallationSucceeded:
		s := ar.SucceededReconcile
		if s == nil || s.Interval == nil {
			return Retry{}
		}
		if st != nil && st.LastRetry.After(last) {
			last = st.LastRetry
		}
		if wait := last.Add(s.Interval.Duration).Sub(now); wait > 0 {
			return Retry{After: wait}
		}
		return Retry{Now: true}
	}
	return Retry{}
}
