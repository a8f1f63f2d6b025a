package explain

import (
	"context"
	"io"
	"strings"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// followInterval is how often `explain -f` reads the trace again: traces
// have no watch.
const followInterval = time.Second

// selection says which reconciles of a trace are shown.
type selection struct {
	// controller keeps only its reconciles ("" every controller's).
	controller string
	// last keeps the last n (0: all).
	last int
	// keepEmpty keeps the reconciles that recorded no step and no error;
	// people are shown only the others.
	keepEmpty bool
}

// apply returns the reconciles of recs sel keeps, oldest first, and how
// many it left out for recording nothing (no step, no error). It is pure.
func (sel selection) apply(recs []api.TraceReconcile) (kept []api.TraceReconcile, empty int) {
	kept = []api.TraceReconcile{}
	for _, r := range recs {
		switch {
		case sel.controller != "" && r.Controller != sel.controller:
		case !sel.keepEmpty && len(r.Steps) == 0 && r.Error == "" && r.Truncated == 0:
			empty++
		default:
			kept = append(kept, r)
		}
	}
	if sel.last > 0 && len(kept) > sel.last {
		kept = kept[len(kept)-sel.last:]
	}
	return kept, empty
}

// follow prints, every followInterval until ctx is done, the reconciles
// of ref that sel keeps and that ended after since (the end of the last
// one printed). It blocks until ctx is done and then returns nil; a read
// that fails is tried again at the next interval; write errors are
// returned.
func follow(ctx context.Context, w io.Writer, c client.Interface, ref api.ObjectReference, sel selection, since time.Time) error {
	sel.last = 0
	tick := time.NewTicker(followInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		tr, err := Read(ctx, c, ref.Kind, ref.Namespace, ref.Name)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		recs, _ := sel.apply(tr.Reconciles)
		var b strings.Builder
		for _, r := range recs {
			if r.End.After(since) {
				b.WriteByte('\n')
				writeReconcile(&b, ref, r, time.Now())
				since = r.End
			}
		}
		if b.Len() > 0 {
			if _, err := io.WriteString(w, b.String()); err != nil {
				return err
			}
		}
	}
}
