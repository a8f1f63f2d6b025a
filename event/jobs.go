package event

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/conflict"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/logsource"
	"cairn.dev/cairn/registry"
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
// output of the event's worker, or of its job J, from this process's
// runtime, the tail kept through the API once it ended, or the process
// leading the controllers (logsource.Source.Open). Errors: NotFound (the
// event, the job, or output not yet there: the unit never started); the
// source's.
func (s *Service) handleLogs(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	ev, err := s.getEvent(ctx, req.Namespace, req.Name)
	if err != nil {
		return registry.ActionResult{}, err
	}
	id, err := api.EventLogUnit(ev, req.Query.Get("job"))
	if err != nil {
		return registry.ActionResult{}, err
	}
	rc, err := s.opts.Logs.Open(ctx, logsource.Request{Namespace: req.Namespace, Unit: id, Follow: req.Query.Get("follow") == "true",
		Path: logsource.LogsPath(api.KindEvent, req.Namespace, req.Name), Query: req.Query})
	if err != nil {
		return registry.ActionResult{}, err
	}
	return logsource.Stream(rc), nil
}
