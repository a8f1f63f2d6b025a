package event

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/registry"
)

// maxFanOutBatch bounds the projects of one fan-out transaction: each
// Event is two of its writes (the Event, its records), and a transaction
// holds at most registry.MaxTxnItems. A batch the store finds too large
// (its conditions or writes beyond --max-txn-ops) is halved.
const maxFanOutBatch = registry.MaxTxnItems / 2

// FanOutResult is the answer of a fan-out: an EventList of the Events
// created, and, per matching project in name order, what was written for
// it.
type FanOutResult struct {
	api.TypeMeta
	api.ListMeta `json:"metadata"`
	Items        []*api.Object `json:"items"`
	// Projects says, for each project whose subscriptions matched, the
	// Event created for it or why none was.
	Projects []ProjectOutcome `json:"projects"`
}

// ProjectOutcome is what a fan-out wrote for one project.
type ProjectOutcome struct {
	Project string `json:"project"`
	// Event is the name of the Event created for the project; empty when
	// none was.
	Event string `json:"event,omitempty"`
	// Error says why no Event was created for the project.
	Error *api.Status `json:"error,omitempty"`
}

// FanOut creates one Event per Project of ev's namespace whose
// subscriptions match ev (api.EventSubscription.Match), each as Create
// does, and returns them. It never half-succeeds silently:
//
//   - every matching project and its secrets are read, and every Event
//     prepared, before anything is written: a project that cannot have
//     its Event (a Secret it names is missing, two of its Secrets share a
//     key) fails the whole fan-out, naming the project, and nothing is
//     written;
//   - the Events and their records are then written in one transaction,
//     or, beyond what one transaction holds (maxFanOutBatch, the store's
//     --max-txn-ops), in several, each all or nothing. When a transaction
//     fails and none was committed, that is the error; when some were
//     committed, the answer is no error but lists, per project, the Event
//     created or the error that kept it from being created.
//
// It blocks on one read of the projects' keys (and a list of the
// projects when they changed: subscriptions.go), one read per project and per
// secret, and the transactions (retried with fresh reads when a project or
// secret changed meanwhile, or a generated name collided). With opts
// DryRun nothing is written. Errors: as Create, naming the project.
func (s *Service) FanOut(ctx context.Context, ev *api.Event, opts api.WriteOptions) (*FanOutResult, error) {
	return s.FanOutNamed(ctx, ev, nil, opts)
}

// FanOutNamed is FanOut, naming the Event of each project name(project)
// (nil: as FanOut does, from ev's name or generateName). Deterministic names
// make a fan-out idempotent: when an Event of that name exists, the
// transaction of its batch fails with AlreadyExists (not retried) and
// writes nothing, so a delivery received twice creates its Events once.
func (s *Service) FanOutNamed(ctx context.Context, ev *api.Event, name func(project string) string,
	opts api.WriteOptions) (*FanOutResult, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	sys := system(ctx)
	names, err := s.subs.subscribed(sys, reg, ev)
	if err != nil {
		return nil, err
	}
	snaps := map[string]*snapshot{}
	ready := map[string]*eventWrite{} // prepared, for the first attempt of each batch
	for _, project := range names {
		if snaps[project], ready[project], err = s.readPrepared(sys, reg, forProjectNamed(ev, project, name)); err != nil {
			return nil, err
		}
	}
	out := &FanOutResult{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.KindEvent + "List"},
		Items: []*api.Object{}, Projects: []ProjectOutcome{}}
	var firstErr error
	batches := slices.Collect(slices.Chunk(names, maxFanOutBatch))
	for len(batches) > 0 {
		b := batches[0]
		batches = batches[1:]
		objs, err := s.commitBatch(sys, reg, ev, name, b, snaps, ready, opts)
		if tooLarge(err) && len(b) > 1 {
			batches = append([][]string{b[:len(b)/2], b[len(b)/2:]}, batches...)
			continue
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			for _, name := range b {
				out.Projects = append(out.Projects, ProjectOutcome{Project: name, Error: asStatus(err)})
			}
			continue
		}
		for i, obj := range objs {
			out.Items = append(out.Items, obj)
			out.Projects = append(out.Projects, ProjectOutcome{Project: b[i], Event: obj.Name})
		}
	}
	if firstErr != nil && len(out.Items) == 0 {
		return nil, firstErr // nothing was written
	}
	return out, nil
}

// readPrepared reads the snapshot of the project of one, the fan-out's
// Event for it, and prepares that Event. The project's last snapshot is
// reused when it prepares (as Create does): the transaction is guarded on
// the project and its secrets being as the snapshot saw them, so a stale
// one fails it with Conflict and commitBatch reads afresh. Errors:
// prepare's and readSnapshot's (on a fresh snapshot), naming the project.
func (s *Service) readPrepared(ctx context.Context, reg *registry.Registry, one *api.Event) (*snapshot, *eventWrite, error) {
	project := one.Spec.Project
	key := one.Namespace + "/" + project
	if sn := s.cachedSnapshot(key); sn != nil {
		if w, err := prepare(one, sn); err == nil {
			return sn, w, nil
		}
	}
	sn, err := readSnapshot(ctx, reg, one.Namespace, project)
	var w *eventWrite
	if err == nil {
		w, err = prepare(one, sn)
	}
	if err != nil {
		s.dropSnapshot(key)
		return nil, nil, projectError(project, err)
	}
	s.keepSnapshot(key, sn)
	return sn, w, nil
}

// commitBatch creates the Events of ev for the projects names in one
// transaction, retrying with fresh snapshots when one changed meanwhile
// (Conflict) or a generated name collided. It answers the created Events
// in the order of names. Errors: Commit's (nothing written), prepare's and
// readSnapshot's for a project that changed meanwhile.
func (s *Service) commitBatch(ctx context.Context, reg *registry.Registry, ev *api.Event, name func(string) string,
	names []string, snaps map[string]*snapshot, ready map[string]*eventWrite, opts api.WriteOptions) ([]*api.Object, error) {
	var (
		objs  []*api.Object
		stale bool // the last attempt met a Conflict: read the snapshots again
		stop  error
	)
	retry := retriable(ev)
	if name != nil { // a name that exists is the answer, not a collision
		retry = func(err error) bool { return errors.Is(err, api.ErrConflict) }
	}
	err := conflict.RetryIf(ctx, retry, func() error {
		for _, project := range names {
			var err error
			if stale {
				if snaps[project], err = readSnapshot(ctx, reg, ev.Namespace, project); err != nil {
					s.dropSnapshot(ev.Namespace + "/" + project)
					stop = projectError(project, err)
					return nil
				}
				s.keepSnapshot(ev.Namespace+"/"+project, snaps[project])
			}
		}
		txn := reg.Txn()
		for _, project := range names {
			w, err := ready[project], error(nil)
			delete(ready, project) // a write is added to one transaction only
			if w == nil || stale {
				w, err = prepare(forProjectNamed(ev, project, name), snaps[project])
			}
			if err == nil {
				err = w.addTo(txn, reg)
			}
			if err != nil {
				stop = projectError(project, err)
				return nil
			}
		}
		res, err := txn.Commit(ctx, opts)
		if err != nil {
			stale = errors.Is(err, api.ErrConflict)
			return err
		}
		objs = make([]*api.Object, len(names))
		for i := range names {
			objs[i] = res[2*i].Object // each Event is followed by its records
		}
		return nil
	})
	if err == nil {
		err = stop
	}
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// forProject is a copy of the fan-out's event ev for project.
func forProject(ev *api.Event, project string) *api.Event {
	one := *ev
	one.Spec.Project = project
	return &one
}

// forProjectNamed is forProject, named name(project) when name is set.
func forProjectNamed(ev *api.Event, project string, name func(string) string) *api.Event {
	one := forProject(ev, project)
	if name != nil {
		one.Name, one.GenerateName = name(project), ""
	}
	return one
}

// projectError is err, said of the fan-out's project: an *api.Status keeps
// its reason and details.
func projectError(project string, err error) error {
	var st *api.Status
	if errors.As(err, &st) {
		c := *st
		c.Message = fmt.Sprintf("event for project %s: %s", project, st.Message)
		return &c
	}
	return fmt.Errorf("event for project %s: %w", project, err)
}

// tooLarge reports whether err is the registry's refusal of a transaction
// beyond the store's limits (Invalid, its causes naming the transaction).
func tooLarge(err error) bool {
	var st *api.Status
	if !errors.As(err, &st) || st.Reason != api.ReasonInvalid || st.Details == nil {
		return false
	}
	return slices.ContainsFunc(st.Details.Causes, func(c api.StatusCause) bool {
		return strings.HasPrefix(c.Field, "transaction.")
	})
}

// asStatus is err as the API answers it.
func asStatus(err error) *api.Status {
	var st *api.Status
	if errors.As(err, &st) {
		return st
	}
	return api.NewStatus(api.ReasonInternalError, "%v", err)
}
