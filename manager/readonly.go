package manager

import (
	"context"
	"io"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// readOnly is the client of a controller's warm part (Process.Client): it
// reads and watches through c and refuses every write, since only a term
// may write, fenced. It embeds nothing, so that a method added to
// client.Interface must be decided on here.
type readOnly struct{ c client.Interface }

// errReadOnly is the error of every write through readOnly.
func errReadOnly() error {
	return api.NewStatus(api.ReasonForbidden, "a controller's standby part does not write: write through its term's client")
}

func (r readOnly) Create(context.Context, *api.Object) (*api.Object, error) {
	return nil, errReadOnly()
}

func (r readOnly) Get(ctx context.Context, kind, ns, name string) (*api.Object, error) {
	return r.c.Get(ctx, kind, ns, name)
}

func (r readOnly) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	return r.c.List(ctx, kind, ns, opts)
}

func (r readOnly) Update(context.Context, *api.Object) (*api.Object, error) {
	return nil, errReadOnly()
}

func (r readOnly) UpdateStatus(context.Context, *api.Object) (*api.Object, error) {
	return nil, errReadOnly()
}

func (r readOnly) Patch(context.Context, string, string, string, []byte, bool) (*api.Object, error) {
	return nil, errReadOnly()
}

func (r readOnly) Delete(context.Context, string, string, string, api.DeleteOptions) (*api.Object, bool, error) {
	return nil, false, errReadOnly()
}

func (r readOnly) Watch(ctx context.Context, kind, ns string, opts api.ListOptions) (api.Watcher, error) {
	return r.c.Watch(ctx, kind, ns, opts)
}

func (r readOnly) Kinds(ctx context.Context) ([]api.KindInfo, error) { return r.c.Kinds(ctx) }

func (r readOnly) Action(context.Context, client.ActionRequest) ([]byte, error) {
	return nil, errReadOnly()
}

func (r readOnly) ActionStream(context.Context, client.ActionRequest) (io.ReadCloser, error) {
	return nil, errReadOnly()
}
