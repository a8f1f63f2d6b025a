package cleaner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner/condition"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/trace"
)

// Reconcile handles the Cleaner key ("namespace/name") as the seed says:
// it reads the Cleaner from the informer cache, lets Decide choose (drop,
// wait for the TTL, or resolve the targets from the shared informers and
// evaluate the conditions), then acts: schedules the next evaluation and
// writes it in status, or deletes the targets marked delete and then the
// Cleaner. It is level-based: reconciled again with nothing changed, it
// decides the same and writes nothing new but the evaluation.
//
// It fails, and is retried with backoff, when a deletion fails. Statuses
// are written behind it (statuswriter.go). A condition that cannot be
// evaluated is not a failure of the reconcile: it is written in status
// (phase Failed, lastError) and evaluated again after retry.period.
func (c *Controller) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, _ := strings.Cut(key, "/")
	trace.Object(ctx, api.KindCleaner, ns, name)
	now := time.Now()

	// GET the Cleaner.
	obj, found := c.cleaners.Get(ns, name)
	var cl *api.Cleaner
	if found {
		var err error
		if cl, err = decodeCleaner(obj); err != nil {
			c.sched.Remove(key)
			trace.Exit(ctx, "the Cleaner does not decode: %v", err)
			return controller.Result{}, controller.Terminal(fmt.Errorf("cleaner: decode %s: %w", key, err))
		}
		// The status last decided, written or not, is the one to build on.
		if raw, ok := c.statuses.latest(key, cl.UID); ok {
			var st api.CleanerStatus
			if json.Unmarshal(raw, &st) == nil {
				cl.Status = st
			}
		}
	}
	in := Input{Now: now, Cleaner: cl, Resolve: func() (Resolution, error) {
		return Resolve(cl, cacheSource{ctx: ctx, c: c})
	}}
	if found && !cl.Deleting() && !now.Before(TTLExpiry(cl)) {
		in.Programs, in.ProgramsErr = c.programsFor(cl)
	}
	d := Decide(ctx, in)
	explain(ctx, cl, d, now)
	c.m.evaluated(d)
	defer func() { c.m.setScheduled(c.sched.Len()) }()

	switch d.Action {
	case ActDrop:
		// If not found (or being deleted): discard the request.
		c.sched.Remove(key)
		if found {
			c.dropPrograms(cl.UID)
		}
		return controller.Result{}, nil
	case ActWait, ActRetry:
		// Schedule the next evaluation: at creation + ttl, at the time the
		// monotonic search found, after a backoff or after retry.period.
		c.sched.Set(key, d.At)
		var prev []string
		if cl.Status.LastEvaluation != nil {
			prev = cl.Status.LastEvaluation.WouldDelete
		}
		if err := c.writeStatus(key, obj, cl, d, now); err != nil {
			return controller.Result{}, err
		}
		for _, ref := range newlyWouldDelete(prev, d.WouldDelete) {
			kind, name, _ := strings.Cut(ref, "/")
			c.announce(ctx, cl, Announcement{Type: EventTypeWouldDelete, Kind: kind, Name: name})
		}
		// Objects beyond the capacity go whatever the conditions say.
		return controller.Result{}, c.deleteObjects(ctx, cl, d.Capacity)
	}
	// Every condition holds: delete the targets marked delete, then the
	// Cleaner itself.
	c.sched.Remove(key)
	if err := c.writeStatus(key, obj, cl, d, now); err != nil {
		return controller.Result{}, err
	}
	if err := c.deleteAll(ctx, cl, d); err != nil {
		d.LastError = deletionError(err, now)
		if werr := c.writeStatus(key, obj, cl, d, now); werr != nil {
			c.log.Warn("cannot record a failed deletion", "cleaner", key, "err", werr)
		}
		return controller.Result{}, err
	}
	return controller.Result{}, nil
}

// deleteAll deletes the objects found for the targets marked delete but
// those carrying cairn.dev/keep, and the objects beyond the capacity, as
// deleteObjects does, then the Cleaner. It stops at the first failure.
func (c *Controller) deleteAll(ctx context.Context, cl *api.Cleaner, d Decision) error {
	if err := c.deleteObjects(ctx, cl, append(d.Resolution.ToDelete(), d.Capacity...)); err != nil {
		return err
	}
	_, err := c.deleteOne(ctx, cl, api.KindCleaner, cl.Name, cl.UID)
	return err
}

// deleteObjects deletes fs on behalf of the Cleaner (api.ActFor: the API
// refuses a deletion its creator may not make, Forbidden, since the
// controller never lends its own authority), each with a uid precondition
// (an object re-created under the same name since it was evaluated is
// left alone), and announces each deletion by an Event. An object already
// gone is not an error. It stops at the first failure.
func (c *Controller) deleteObjects(ctx context.Context, cl *api.Cleaner, fs []Found) error {
	forCleaner := api.ActFor(ctx, api.KindCleaner, &cl.ObjectMeta)
	for _, f := range fs {
		deleted, err := c.deleteOne(forCleaner, cl, f.Kind, f.Name, f.UID)
		if err != nil {
			return err
		}
		if deleted {
			c.announce(ctx, cl, Announcement{Type: EventTypeDeleted, Kind: f.Kind, Name: f.Name})
		}
	}
	return nil
}

// deleteOne deletes kind/name of cl's namespace if its uid is still uid,
// reporting whether it did. Gone or re-created is no error.
func (c *Controller) deleteOne(ctx context.Context, cl *api.Cleaner, kind, name, uid string) (bool, error) {
	_, _, err := c.c.Delete(ctx, kind, cl.Namespace, name, api.DeleteOptions{Preconditions: api.Preconditions{UID: uid}})
	switch {
	case err == nil:
		c.m.deleted()
		trace.Action(ctx, "deleted %s/%s (uid %s)", kind, name, uid)
		return true, nil
	case errors.Is(err, api.ErrNotFound):
		trace.Check(ctx, "%s/%s is already gone", kind, name)
	case errors.Is(err, api.ErrConflict):
		trace.Check(ctx, "%s/%s is no longer the object evaluated (uid %s): left alone", kind, name, uid)
	default:
		return false, fmt.Errorf("delete %s/%s: %w", kind, name, err)
	}
	return false, nil
}

// announce creates the Event of a by fan-out in cl's namespace (one per
// Project subscribed). A failure is logged and traced, never the
// reconcile's: the deletion is done.
func (c *Controller) announce(ctx context.Context, cl *api.Cleaner, a Announcement) {
	ev, err := cleanerEvent(cl.Namespace, cl.Name, a)
	if err == nil {
		_, err = c.c.Create(ctx, ev)
	}
	if err != nil {
		c.log.Warn("cannot announce a Cleaner's deletion", "cleaner", api.Key(cl.Namespace, cl.Name),
			"type", a.Type, "object", a.Kind+"/"+a.Name, "err", err)
		trace.Check(ctx, "the %s Event of %s/%s was not created: %v", a.Type, a.Kind, a.Name, err)
		return
	}
	trace.Action(ctx, "announced %s %s/%s (Event source %s)", a.Type, a.Kind, a.Name, EventSource)
}

// decodeCleaner is the typed Cleaner of o, as o.Into gives it, without
// encoding o first: its metadata copied, its spec and status decoded.
func decodeCleaner(o *api.Object) (*api.Cleaner, error) {
	cl := &api.Cleaner{TypeMeta: o.TypeMeta, ObjectMeta: *o.ObjectMeta.DeepCopy()}
	if raw := o.Field(api.FieldSpec); raw != nil {
		if err := json.Unmarshal(raw, &cl.Spec); err != nil {
			return nil, fmt.Errorf("spec: %w", err)
		}
	}
	if raw := o.Field(api.FieldStatus); raw != nil {
		if err := json.Unmarshal(raw, &cl.Status); err != nil {
			return nil, fmt.Errorf("status: %w", err)
		}
	}
	return cl, nil
}

// statusFor is the Cleaner's status after decision d, taken at now.
func statusFor(cl *api.Cleaner, d Decision, now time.Time) api.CleanerStatus {
	st := cl.Status
	st.ObservedGeneration = cl.Generation
	st.Phase = d.Phase
	st.NextScheduledEvaluation = nil
	if !d.At.IsZero() {
		at := d.At
		st.NextScheduledEvaluation = &at
	}
	st.LastError = d.LastError
	st.ConsecutiveFailures = d.Failures
	switch {
	case d.Evaluated:
		st.ResolvedTargets = d.Resolution.Resolved()
		ev := &api.CleanerEvaluation{Time: now}
		for i, r := range d.Results {
			cr := api.ConditionResult{Index: i}
			if r.Err != nil {
				cr.Error = r.Err.Error()
				if ev.Error == "" {
					ev.Error = fmt.Sprintf("condition %d: %v", i, r.Err)
				}
			} else {
				v := r.Value
				cr.Value = &v
			}
			ev.Results = append(ev.Results, cr)
		}
		ev.Search, ev.WouldDelete, ev.Kept = d.Search, d.WouldDelete, d.Kept
		st.LastEvaluation = ev
	case d.LastError != nil && d.LastError.Reason != api.CleanerReasonDeleteFailed:
		// Not evaluated: the targets or the conditions failed first.
		st.LastEvaluation = &api.CleanerEvaluation{Time: now, Error: d.LastError.Message}
	}
	return st
}

// writeStatus hands the status of decision d to the status writer
// (statuswriter.go), unless it is the status last decided already (or,
// with none pending, the cached one).
func (c *Controller) writeStatus(key string, obj *api.Object, cl *api.Cleaner, d Decision, now time.Time) error {
	raw, err := json.Marshal(statusFor(cl, d, now))
	if err != nil {
		return fmt.Errorf("cleaner: encode status: %w", err)
	}
	last, ok := c.statuses.latest(key, cl.UID)
	if !ok {
		last = obj.Field(api.FieldStatus)
	}
	if controller.StatusChanged(last, json.RawMessage(raw)) {
		c.statuses.set(key, cl.UID, raw)
	}
	return nil
}

// maxTracedValue bounds the JSON of one variable in a trace step.
const maxTracedValue = 400

// explain records the decision in the reconcile's trace, in the seed's
// steps: the TTL, the targets resolved, each condition and its value, the
// variables the conditions saw (Secret values redacted), and when the next
// evaluation is and why then.
func explain(ctx context.Context, cl *api.Cleaner, d Decision, now time.Time) {
	if trace.From(ctx) == nil {
		return
	}
	if cl == nil {
		trace.Exit(ctx, "not found: request discarded")
		return
	}
	if d.Action == ActDrop {
		trace.Exit(ctx, "being deleted: request discarded")
		return
	}
	ttl := TTLExpiry(cl)
	if d.Action == ActWait {
		trace.Check(ctx, "TTL %s passes at %s: not yet", cl.Spec.TTL, ttl.Format(time.RFC3339))
		trace.Exit(ctx, "%s: next evaluation at %s (%s)", d.Phase, d.At.Format(time.RFC3339), d.Why)
		return
	}
	trace.Check(ctx, "TTL %s passed at %s", cl.Spec.TTL, ttl.Format(time.RFC3339))
	if d.Evaluated {
		trace.Subflow(ctx, "resolve targets")
		for _, t := range cl.Spec.Targets {
			var refs []string
			for _, f := range d.Resolution.Found {
				if f.Target == t.Name {
					refs = append(refs, f.Ref())
				}
			}
			found := strings.Join(refs, ", ")
			if found == "" {
				found = "nothing"
			}
			trace.Check(ctx, "target %s (%s, delete %v, evaluated %v) resolved to %s", t.Name,
				describeRef(t.Reference), t.Delete, t.Evaluated(), found)
		}
		trace.Subflow(ctx, "evaluate %d conditions at %s", len(d.Results), now.Format(time.RFC3339))
		for _, t := range cl.Spec.Targets {
			if t.Evaluated() {
				trace.Check(ctx, "variable %s = %s", t.Name, traced(d.Resolution.Vars[t.Name]))
			}
		}
		for i, r := range d.Results {
			src := strings.Join(strings.Fields(cl.Spec.Conditions[i]), " ")
			if r.Err != nil {
				trace.Check(ctx, "condition %d `%s`: %v", i, src, r.Err)
			} else {
				trace.Check(ctx, "condition %d `%s` = %v", i, src, r.Value)
			}
		}
	}
	explainPolicies(ctx, cl, d)
	switch {
	case d.Action == ActDelete:
		trace.Exit(ctx, "every condition holds: deleting %d target objects, then the Cleaner", len(d.Resolution.ToDelete()))
	case d.Why == WhyDryRun || d.Why == WhyStanding:
		trace.Exit(ctx, "%s: every condition holds (%s); next evaluation at %s", d.Phase, d.Why, d.At.Format(time.RFC3339))
	case d.LastError != nil:
		trace.Exit(ctx, "%s (%s): %s; next evaluation at %s (%s)", d.Phase, d.LastError.Reason, d.LastError.Message,
			d.At.Format(time.RFC3339), d.Why)
	default:
		if d.Search != "" {
			trace.Check(ctx, "%s", d.Search)
		}
		trace.Exit(ctx, "%s: %s; next evaluation at %s (%s)", d.Phase, falseOnes(d.Results),
			d.At.Format(time.RFC3339), d.Why)
	}
}

// explainPolicies records what the keep annotation, the capacity and a
// dry run made of the decision.
func explainPolicies(ctx context.Context, cl *api.Cleaner, d Decision) {
	if cp := cl.Spec.Capacity; cp != nil && d.Resolution.CapacityKind != "" {
		trace.Check(ctx, "capacity: at most %d %s selected by %s; %d found", cp.Max, cp.Selector.Kind,
			selectorString(cp.Selector.MatchLabels), len(d.Resolution.Capacity))
		for _, f := range d.Capacity {
			trace.Check(ctx, "%s is beyond the capacity (the oldest first): deleting it", f.Ref())
		}
	}
	for _, ref := range d.Kept {
		trace.Check(ctx, "%s carries %s: \"true\": never deleted by a Cleaner", ref, api.AnnotationKeep)
	}
	if cl.Spec.DryRun && len(d.WouldDelete) > 0 {
		trace.Check(ctx, "dry run: would delete %s; nothing deleted", strings.Join(d.WouldDelete, ", "))
	}
}

func describeRef(r api.TargetReference) string {
	if r.Name != "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + " selected by " + selectorString(r.MatchLabels)
}

// falseOnes says which conditions were false.
func falseOnes(rs []condition.Result) string {
	var idx []string
	for i, r := range rs {
		if r.Err == nil && !r.Value {
			idx = append(idx, fmt.Sprint(i))
		}
	}
	if len(idx) == 1 {
		return "condition " + idx[0] + " is false"
	}
	return "conditions " + strings.Join(idx, ", ") + " are false"
}

// traced renders a variable for a trace step: compact JSON, cut short.
func traced(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "<unencodable>"
	}
	raw := bytes.TrimSpace(b.Bytes())
	if len(raw) > maxTracedValue {
		return strings.ToValidUTF8(string(raw[:maxTracedValue]), "") + "…"
	}
	return string(raw)
}
