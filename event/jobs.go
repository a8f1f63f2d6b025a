package event

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/runtime"
)

// maxJobName bounds a job's name (its runtime unit ID holds it).
const maxJobName = 40

// JobRequest is the body of POST .../events/{name}/jobs.
type JobRequest struct {
	Name string         `json:"name"`
	Spec api.WorkerSpec `json:"spec"`
}

// handleJob serves POST .../events/{name}/jobs.
func (s *Service) handleJob(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	var jr JobRequest
	dec := json.NewDecoder(bytes.NewReader(req.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jr); err != nil {
		return registry.ActionResult{}, api.NewBadRequest("the body is not a job ({name, spec}): %v", err)
	}
	job, err := s.CreateJob(ctx, req.Namespace, req.Name, jr)
	if err != nil {
		return registry.ActionResult{}, err
	}
	return registry.ActionResult{Code: http.StatusCreated, Object: job}, nil
}

// CreateJob adds the job jr to the event ns/name, PENDING: the scheduler
// starts it when the job capacity allows. Only a worker that is STARTING
// or RUNNING creates jobs. It blocks on a read and a write of the store
// (retried when the status changed meanwhile). Errors: Invalid (the job's
// name or spec, each naming the field); NotFound; AlreadyExists (the event
// has a job of that name); Conflict (the worker is not running); the
// store's.
func (s *Service) CreateJob(ctx context.Context, ns, name string, jr JobRequest) (*api.JobStatus, error) {
	reg, err := s.registry()
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(jr.Name) {
		errs = append(errs, field.Invalid(field.NewPath("name"), jr.Name, msg))
	}
	if len(jr.Name) > maxJobName {
		errs = append(errs, field.TooLong(field.NewPath("name"), jr.Name, maxJobName))
	}
	errs = append(errs, kinds.ValidateWorkerSpec(&jr.Spec, field.NewPath("spec"))...)
	if len(errs) > 0 {
		return nil, api.NewInvalid("Job", jr.Name, errs)
	}
	job := api.JobStatus{Name: jr.Name, Spec: jr.Spec, Phase: api.PhasePending}
	get := func(ctx context.Context) (*api.Event, error) { return s.getEvent(ctx, ns, name) }
	add := func(ev *api.Event) (bool, error) {
		switch ph := ev.Status.Worker.Phase; ph {
		case api.PhaseStarting, api.PhaseRunning:
		default:
			return false, api.NewConflict(api.KindEvent, name, fmt.Sprintf("the worker is %s: only a running worker creates jobs", ph))
		}
		for _, j := range ev.Status.Jobs {
			if j.Name == jr.Name {
				return false, api.NewStatus(api.ReasonAlreadyExists, "event %s already has a job named %q", name, jr.Name)
			}
		}
		ev.Status.Jobs = append(ev.Status.Jobs, job)
		return true, nil
	}
	if _, _, err := conflict.Modify(ctx, nil, get, add, func(ctx context.Context, ev *api.Event) (*api.Event, error) {
		return s.writeStatus(ctx, reg, ev)
	}); err != nil {
		return nil, err
	}
	return &job, nil
}

// handleLogs serves GET .../events/{name}/logs?job=J&follow=true: the
// output of the event's worker, or of its job J, from the runtime (which
// keeps it until the event is deleted). Errors: NotFound (the event, the
// job, or output not yet there: the unit never started), ServiceUnavailable
// (this process holds no runtime).
func (s *Service) handleLogs(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	ev, err := s.getEvent(ctx, req.Namespace, req.Name)
	if err != nil {
		return registry.ActionResult{}, err
	}
	id := api.WorkerUnitID(ev.UID)
	if job := req.Query.Get("job"); job != "" {
		found := false
		for _, j := range ev.Status.Jobs {
			found = found || j.Name == job
		}
		if !found {
			return registry.ActionResult{}, api.NewStatus(api.ReasonNotFound, "event %s has no job %q", req.Name, job)
		}
		id = api.JobUnitID(ev.UID, job)
	}
	rt := s.runtime()
	if rt == nil {
		return registry.ActionResult{}, api.NewStatus(api.ReasonUnavailable,
			"this server runs no controllers, so it holds no logs: ask the server that runs them")
	}
	follow := req.Query.Get("follow") == "true"
	rc, err := rt.Logs(ctx, id, runtime.LogOptions{Follow: follow})
	if errors.Is(err, runtime.ErrNotFound) {
		return registry.ActionResult{}, api.NewStatus(api.ReasonNotFound, "no logs for %s yet: it has not started", id)
	}
	if err != nil {
		return registry.ActionResult{}, err
	}
	return registry.ActionResult{Stream: func(ctx context.Context, w io.Writer, flush func()) error {
		defer rc.Close()
		stop := context.AfterFunc(ctx, func() { rc.Close() })
		defer stop()
		buf := make([]byte, 32<<10)
		for {
			n, err := rc.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return werr
				}
				flush()
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}}, nil
}
