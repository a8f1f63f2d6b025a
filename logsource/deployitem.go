package logsource

import (
	"context"
	"fmt"
	"net/http"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/registry"
)

// DeployItemActions are the DeployItem kind's endpoints:
//
//	GET /namespaces/{ns}/deployitems/{name}/logs[?delete=true][&follow=true]
//
// the output of a container item's last run, or with delete=true of its
// last delete command.
func (s *Source) DeployItemActions() []registry.Action {
	return []registry.Action{{Name: api.ActionLogs, Method: http.MethodGet, Handle: s.handleDeployItemLogs,
		Params: []string{"delete", "follow"}}}
}

// handleDeployItemLogs serves a deploy item's logs. Errors: NotFound (the
// item, a run not started yet or an item of another type than container,
// whose deployers run no command); BadRequest for a delete or follow that
// is not true or false; Open's.
func (s *Source) handleDeployItemLogs(ctx context.Context, req registry.ActionRequest) (registry.ActionResult, error) {
	del, err := boolParam(req, "delete")
	if err != nil {
		return registry.ActionResult{}, err
	}
	follow, err := boolParam(req, "follow")
	if err != nil {
		return registry.ActionResult{}, err
	}
	reg, _, _ := s.parts()
	if reg == nil {
		return registry.ActionResult{}, api.NewStatus(api.ReasonUnavailable, "the log service is not ready")
	}
	obj, err := reg.Get(identity.With(api.WithoutOnBehalfOf(ctx), identity.System()), api.KindDeployItem, req.Namespace, req.Name)
	if err != nil {
		return registry.ActionResult{}, err
	}
	var d api.DeployItem
	if err := obj.Into(&d); err != nil {
		return registry.ActionResult{}, fmt.Errorf("logsource: stored deploy item %q does not decode: %w", req.Name, err)
	}
	if d.Spec.Type != api.DeployItemTypeContainer {
		return registry.ActionResult{}, api.NewStatus(api.ReasonNotFound,
			"deploy item %s is of type %s: only container items run commands, whose output `cairn logs` shows", d.Name, d.Spec.Type)
	}
	id, err := api.DeployItemLogUnit(&d, del)
	if err != nil {
		return registry.ActionResult{}, err
	}
	rc, err := s.Open(ctx, Request{Namespace: req.Namespace, Unit: id, Follow: follow, Query: req.Query,
		Path: LogsPath(api.KindDeployItem, req.Namespace, req.Name)})
	if err != nil {
		if api.ReasonOf(err) == api.ReasonNotFound && del {
			return registry.ActionResult{}, api.NewStatus(api.ReasonNotFound,
				"no delete output for deploy item %s: its delete command has not run", d.Name)
		}
		return registry.ActionResult{}, err
	}
	return Stream(rc), nil
}

// boolParam reads the optional boolean parameter name of req.
func boolParam(req registry.ActionRequest, name string) (bool, error) {
	switch v := req.Query.Get(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, api.NewBadRequest("%s must be true or false, not %q", name, v)
	}
}
