package delete

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/client"
)

// alreadyDeleting returns the object t names when it is being deleted
// already, or nil (not deleting, not found, or unreadable: the delete
// that follows says why). It blocks on one GET.
func alreadyDeleting(ctx context.Context, c client.Interface, t target) *api.Object {
	o, err := c.Get(ctx, t.kind.Kind, t.ns, t.name)
	if err != nil || !o.Deleting() {
		return nil
	}
	return o
}

// stillDeleting is the line for an object a delete found being deleted
// already: for how long, and the finalizers that hold it (the controllers
// that set them remove them when their work is done). ref is escaped
// already; finalizer names are escaped here.
func stillDeleting(ref string, o *api.Object, now time.Time) string {
	msg := fmt.Sprintf("%s is already being deleted (for %s)", ref, printer.Age(*o.DeletionTimestamp, now))
	switch len(o.Finalizers) {
	case 0:
		return msg
	case 1:
		return msg + ", held by the finalizer " + printer.Escape(o.Finalizers[0])
	}
	return msg + ", held by the finalizers " + printer.Escape(strings.Join(o.Finalizers, ", "))
}
