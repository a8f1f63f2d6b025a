package deployer

import (
	"context"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/trace"
)

// refused records in d's lastError that the API refused a write this
// reconcile needed (api.WriteRefused: a namespace at its object limit, so
// the exports' DataObject cannot be created; an object too large; a full
// store), with the API's reason and message, and returns err: the
// reconcile is retried with backoff, as what fixes it sends the item no
// event. The phase is left as it is (the work is done, its end not yet
// written), and the final status write clears lastError. Other errors are
// returned as they are; a failure to record is only logged.
func (k *Controller) refused(ctx context.Context, key string, d *api.DeployItem, err error) error {
	if !api.WriteRefused(err) {
		return err
	}
	msg := fmt.Sprintf("the API refused a write (%s): %v", api.ReasonOf(err), err)
	if le := d.Status.LastError; le == nil || le.Reason != api.ReasonWriteRefused || le.Message != msg {
		d.Status.LastError = &api.LastError{Reason: api.ReasonWriteRefused, Message: msg, Time: k.opts.Now().UTC()}
		if werr := k.writeStatus(ctx, key, d); werr != nil {
			k.log.Warn("deployer: cannot record a refused write", "item", key, "err", werr)
		}
	}
	trace.Exit(ctx, "%s: %s (retried with backoff)", api.ReasonWriteRefused, msg)
	return err
}
