// Package wait is `cairn wait KIND NAME --for ...`: it blocks, watching the
// object, until a condition holds (a phase, a value at a path, deletion)
// or a timeout passes. Until is also what `cairn delete --wait` uses.
package wait

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
	"cairn.dev/cairn/cli/session"
	"cairn.dev/cairn/client"
)

// flagpole holds the flags of `cairn wait`.
type flagpole struct {
	For     string
	Timeout time.Duration
}

// New returns the `wait` command.
func New(s *session.Session) *cobra.Command {
	flags := &flagpole{}
	cmd := &cobra.Command{
		Use:   "wait KIND NAME --for delete|phase=PHASE|jsonpath=.path=VALUE",
		Short: "Wait until an object reaches a phase, has a value, or is deleted",
		Long: "Wait watches one object until the condition given with --for holds, then exits 0.\n" +
			"It exits non-zero when --timeout passes first, saying what it waited for and what it saw last.\n" +
			"An object that does not exist yet is waited for too.",
		Example: "  cairn wait installation preview-42 --for phase=Succeeded --timeout 2m\n" +
			"  cairn wait secret db --for delete",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd.Context(), s, flags, args[0], args[1])
		},
	}
	cmd.Flags().StringVar(&flags.For, "for", "", "the condition: delete, phase=PHASE or jsonpath=.path=VALUE (required)")
	cmd.Flags().DurationVar(&flags.Timeout, "timeout", 30*time.Second, "how long to wait; 0 waits forever")
	_ = cmd.MarkFlagRequired("for")
	return cmd
}

func run(ctx context.Context, s *session.Session, flags *flagpole, kindName, name string) error {
	cond, err := ParseFor(flags.For)
	if err != nil {
		return err
	}
	if flags.Timeout < 0 {
		return fmt.Errorf("--timeout must not be negative")
	}
	kind, c, err := s.KindClient(ctx, kindName)
	if err != nil {
		return err
	}
	obj, err := Until(ctx, c, kind, s.NamespaceFor(kind, ""), name, cond, flags.Timeout)
	if err != nil {
		return err
	}
	ref := printer.ObjectName(kind.Kind, name)
	if cond.deletion {
		_, err = fmt.Fprintf(s.Streams.Out, "%s deleted\n", ref)
	} else {
		_, err = fmt.Fprintf(s.Streams.Out, "%s condition met (%s)\n", printer.ObjectName(kind.Kind, obj.Name), cond.Description)
	}
	return err
}

// TimeoutError reports a wait that ran out of time: what it waited for and
// what it saw last.
type TimeoutError struct {
	// Object names what was waited on: "installation/x in namespace default".
	Object string
	// Condition is Condition.Description.
	Condition string
	// LastSeen describes the object as last seen.
	LastSeen string
	Timeout  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("timed out after %s waiting for %s to %s; last seen: %s",
		e.Timeout, e.Object, e.Condition, e.LastSeen)
}

// Is makes errors.Is(err, context.DeadlineExceeded) true.
func (e *TimeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// Until blocks until cond holds for the object kind/ns/name and returns the
// object as last seen (nil once deleted). It reads the object, then watches
// it, resuming the watch when the server closes it and starting over when
// its resource version is compacted (Gone). A timeout of 0 waits until ctx
// is done. Errors: *TimeoutError when the timeout passes first; ctx's error
// when ctx ends first; client errors (server unreachable, token rejected,
// unknown kind) otherwise.
func Until(ctx context.Context, c client.Interface, kind api.KindInfo, ns, name string, cond Condition, timeout time.Duration) (*api.Object, error) {
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	w := &waiter{c: c, kind: kind, ns: ns, name: name, cond: cond}
	err := w.run(wctx)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		what := printer.ObjectName(kind.Kind, name)
		if ns != "" {
			what += " in namespace " + ns
		}
		return w.last, &TimeoutError{Object: what, Condition: cond.Description,
			LastSeen: cond.describe(w.last, kind.Sensitive), Timeout: timeout}
	}
	return w.last, err
}

// waiter is the state of one Until call.
type waiter struct {
	c    client.Interface
	kind api.KindInfo
	ns   string
	name string
	cond Condition
	last *api.Object
	uid  string // of the first object seen, for deletion conditions
}

// met records obj as last seen and reports whether the condition holds.
func (w *waiter) met(obj *api.Object) bool {
	if w.cond.deletion && obj != nil && w.uid != "" && obj.UID != w.uid {
		obj = nil // another incarnation: the one awaited is gone
	}
	w.last = obj
	return w.cond.met(obj)
}

func (w *waiter) run(ctx context.Context) error {
	for {
		rv, err := w.read(ctx)
		if err != nil || rv == "" {
			return err
		}
		err = w.watch(ctx, rv)
		if errors.Is(err, api.ErrExpired) {
			continue // compacted: read again
		}
		return err
	}
}

// read gets the current state; it returns "" when the condition already
// holds, else the resource version to watch from.
func (w *waiter) read(ctx context.Context) (string, error) {
	obj, err := w.c.Get(ctx, w.kind.Kind, w.ns, w.name)
	switch {
	case err == nil:
		if w.uid == "" {
			w.uid = obj.UID
		}
		if w.met(obj) {
			return "", nil
		}
		return obj.ResourceVersion, nil
	case errors.Is(err, api.ErrNotFound):
		if w.met(nil) {
			return "", nil
		}
		// Not there yet: watch from the collection's current version.
		list, err := w.c.List(ctx, w.kind.Kind, w.ns, api.ListOptions{Limit: 1})
		if err != nil {
			return "", err
		}
		return list.ResourceVersion, nil
	default:
		return "", err
	}
}

// watch follows changes after rv until the condition holds (nil), the
// watch fails (its error) or ctx ends. A stream the server closes or a
// broken connection is resumed from the last version seen.
func (w *waiter) watch(ctx context.Context, rv string) error {
	for {
		wa, err := w.c.Watch(ctx, w.kind.Kind, w.ns, api.ListOptions{ResourceVersion: rv})
		if err != nil {
			if !session.Resumable(err) {
				return err
			}
			if err := session.Pause(ctx, session.ResumeDelay); err != nil {
				return err
			}
			continue
		}
		done := false
		for ev := range wa.Events() {
			if ev.Object == nil {
				continue
			}
			if ev.Object.ResourceVersion != "" {
				rv = ev.Object.ResourceVersion
			}
			if ev.Type == api.Bookmark || ev.Type == api.Error || ev.Object.Name != w.name {
				continue
			}
			obj := ev.Object
			if ev.Type == api.Deleted {
				obj = nil
			} else if w.uid == "" {
				w.uid = obj.UID
			}
			if w.met(obj) {
				done = true
				break
			}
		}
		wa.Stop()
		if done {
			return nil
		}
		err = wa.Err()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !session.Resumable(err) {
			return err
		}
		if err != nil {
			if err := session.Pause(ctx, session.ResumeDelay); err != nil {
				return err
			}
		}
	}
}
