// Package lease elects one leader among processes that share a cairn API,
// through a cluster-scoped Lease object written with compare-and-swap
// updates. It needs nothing but a client.Interface (HTTP or in-process), so
// `cairn server` processes and `cairn controller-manager` processes can all
// compete for the same Lease, and exactly one of them leads.
//
// The rules that keep two leaders from overlapping, without assuming that
// the candidates' clocks agree:
//
//   - Every write to the Lease — acquire, renew, release — is an update
//     conditioned on the resourceVersion the writer last read or wrote. A
//     Conflict means someone else moved: the writer reads again and decides
//     afresh. Only the first acquisition of a missing Lease is a create.
//   - A candidate judges expiry by its own clock, from the moment it
//     observed the current record (its resourceVersion): it takes the Lease
//     over only after it has seen that same resourceVersion for a full lease
//     duration (the record's leaseDurationSeconds). It never compares the
//     holder's timestamps (acquireTime, renewTime) with its own clock; they
//     are for people reading the record.
//   - The holder renews every RetryPeriod and stops leading (cancels the
//     context it gave lead) once RenewDeadline has passed since its last
//     confirmed renewal, measured from the start of that renewal's request.
//     Any candidate's observation of that renewal comes after its start, and
//     RenewDeadline < Duration, so the old leader has stopped before anyone
//     else can acquire. The gap, Duration − RenewDeadline, is the time the
//     lead function has to notice its context and stop.
//   - A holder whose lead function has returned releases the Lease (a
//     compare-and-swap clearing holderIdentity), and any candidate acquires a
//     released Lease at once.
//   - A candidate leads only with time left: an acquisition that the store
//     confirmed too late (less than a RetryPeriod of RenewDeadline left) is
//     first confirmed by a renewal, and lead is never called past the
//     deadline.
//   - The clocks bound when a leader acts; fencing makes its writes safe
//     regardless. Each term has an api.Fence (the Lease's uid, holder and
//     transitions): writes that carry it commit only if the Lease is still
//     in that term in the same transaction, so a leader that lost the Lease
//     while it believed it held it (a paused process, a slow clock) has its
//     writes refused instead of racing the new leader's.
//
// These rules assume only that the candidates' clocks run at about the same
// rate, not that they show the same time. A Lease deleted by hand is
// recreated at once by the next candidate; its old holder stops at its next
// renewal: deleting the Lease is an administrator's override.
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
)

// DefaultDuration is the lease duration when Options.Duration is unset.
const DefaultDuration = 5 * time.Second

// maxIdentityBytes is the longest holderIdentity the API accepts.
const maxIdentityBytes = 1 << 10

// ErrInvalidOptions is returned by Run, at once, for options that cannot
// give a safe election (see Options).
var ErrInvalidOptions = errors.New("lease: invalid options")

// Options configures a candidate. Durations are measured with the
// process's monotonic clock.
type Options struct {
	// Name of the Lease; candidates with the same name compete. Required.
	Name string
	// Identity of this candidate, written as the Lease's holderIdentity:
	// its URL, where it serves its traces and metrics. Required, at most
	// 1 KiB.
	Identity string
	// Duration is how long other candidates wait, after they last saw the
	// Lease change, before they take it over from a silent holder. It is
	// written to the Lease rounded up to whole seconds. Default
	// DefaultDuration.
	Duration time.Duration
	// RenewDeadline is how long the holder keeps leading without a
	// confirmed renewal. It must be less than Duration. Default 2/3 of
	// Duration.
	RenewDeadline time.Duration
	// RetryPeriod is how often the holder renews; a candidate looks at
	// the Lease twice as often. It must be less than RenewDeadline.
	// Default Duration/5.
	RetryPeriod time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Now returns the wall time written into acquireTime and renewTime;
	// default time.Now. No decision depends on it.
	Now func() time.Time
}

func (o Options) withDefaults() (Options, error) {
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = o.Duration * 2 / 3
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = o.Duration / 5
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	switch {
	case o.Name == "":
		return o, fmt.Errorf("%w: a lease name is required", ErrInvalidOptions)
	case o.Identity == "" || len(o.Identity) > maxIdentityBytes:
		return o, fmt.Errorf("%w: an identity of 1 to %d bytes is required", ErrInvalidOptions, maxIdentityBytes)
	case o.Duration < 0 || o.RenewDeadline <= 0 || o.RetryPeriod <= 0:
		return o, fmt.Errorf("%w: durations must be positive", ErrInvalidOptions)
	case o.RenewDeadline >= o.Duration:
		return o, fmt.Errorf("%w: the renew deadline (%s) must be less than the lease duration (%s)",
			ErrInvalidOptions, o.RenewDeadline, o.Duration)
	case o.RetryPeriod >= o.RenewDeadline:
		return o, fmt.Errorf("%w: the retry period (%s) must be less than the renew deadline (%s)",
			ErrInvalidOptions, o.RetryPeriod, o.RenewDeadline)
	}
	return o, nil
}

// Run campaigns for the Lease opts.Name until ctx is done. Each time this
// candidate is elected it calls lead with a context that is cancelled when
// leadership is lost (no renewal confirmed within RenewDeadline, or the
// Lease taken or deleted by another) or ctx is done, and with the term's
// fence: writes that carry it (client.Fenced) commit only while this term
// holds the Lease, whatever the clocks say. Valid(ctx) checks the term by
// this process's clock, for side effects outside the store. It waits for lead to return. Then it releases the Lease, so that another candidate takes over
// at once, and campaigns again; after a lead that returned by itself (a
// failing controller) it first waits two retry periods, so that the other
// candidates get the Lease. lead must return promptly once its context is
// done: the old leader has Duration − RenewDeadline to stop.
//
// Run blocks. It returns nil when ctx is done (after lead has returned and
// the Lease has been released), or ErrInvalidOptions at once. Errors of
// the API (an unreachable server, say) are logged and retried.
func Run(ctx context.Context, c client.Interface, opts Options, lead func(ctx context.Context, f api.Fence)) error {
	opts, err := opts.withDefaults()
	if err != nil {
		return err
	}
	e := &elector{
		leases: client.For[*api.Lease](c),
		opts:   opts,
		log:    opts.Logger.With("lease", opts.Name, "identity", opts.Identity),
	}
	for {
		t := e.campaign(ctx)
		if t == nil {
			return nil // ctx is done
		}
		returned := e.hold(ctx, t, lead)
		e.release(t)
		if ctx.Err() != nil {
			return nil
		}
		if returned {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(2 * opts.RetryPeriod):
			}
		}
	}
}

// Current returns the live holder of the Lease name: its holderIdentity,
// or "" when the Lease does not exist, is released, or looks expired. It is
// a routing hint (where to forward a trace request), never a basis for
// acting as leader: "expired" is judged from the holder's renewTime by the
// caller's clock, allowing one extra lease duration for clock skew. It
// blocks for one read; errors other than NotFound are returned wrapped.
func Current(ctx context.Context, c client.Interface, name string) (string, error) {
	l, err := client.For[*api.Lease](c).Get(ctx, "", name)
	if errors.Is(err, api.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("lease: read %q: %w", name, err)
	}
	if l.Spec.HolderIdentity == "" {
		return "", nil
	}
	if time.Since(l.Spec.RenewTime) > 2*recordDuration(l, DefaultDuration) {
		return "", nil
	}
	return l.Spec.HolderIdentity, nil
}

// recordDuration is the lease duration a record declares, or fallback when
// it declares none.
func recordDuration(l *api.Lease, fallback time.Duration) time.Duration {
	if l.Spec.LeaseDurationSeconds <= 0 {
		return fallback
	}
	return time.Duration(l.Spec.LeaseDurationSeconds) * time.Second
}
