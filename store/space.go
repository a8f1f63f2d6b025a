package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Space defaults and bounds.
const (
	// DefaultQuota is the store quota when none is set: etcd's default.
	DefaultQuota = 2 << 30
	// MinQuota is the smallest quota that leaves room for a few of the
	// largest transactions (MaxRequestBytes) besides etcd's own data.
	MinQuota = 16 << 20
	// DefaultSpaceInterval is how often the space monitor checks.
	DefaultSpaceInterval = 5 * time.Second
	// HeadroomPercent of the quota is kept free below it: writes that add
	// data stop at the soft limit (Space.Limit), so that deletion marks
	// still fit and etcd's own alarm does not fire.
	HeadroomPercent = 5
	// DefaultReserve is the default of SpaceOptions.Reserve: an object of
	// the registry's default largest size (1.5 MiB) with its key.
	DefaultReserve = 2 << 20
)

// checkTimeout bounds one round of the monitor but a defragmentation;
// defragTimeout bounds a defragmentation, which blocks the member while
// it rewrites its database.
const (
	checkTimeout  = 30 * time.Second
	defragTimeout = 5 * time.Minute
)

// Space is the store's space as the monitor last saw it.
type Space struct {
	// Quota is etcd's backend quota in bytes; 0 until the first check.
	Quota int64
	// Limit is the soft limit: Quota less HeadroomPercent of it.
	Limit int64
	// Size is the database size the quota counts, of the largest member;
	// InUse is the part of it that holds data, the rest being free pages
	// that a defragmentation gives back.
	Size, InUse int64
	// Pending is what writes stored since the check (etcd's quota cost of
	// their puts): an estimate of Size's growth until the next check.
	Pending int64
	// Reserve is the room under Limit the store needs to count as not
	// full (SpaceOptions.Reserve).
	Reserve int64
	// Alarm reports etcd's NOSPACE alarm: while it is raised, etcd refuses
	// every request that stores data, and accepts reads and deletions.
	Alarm bool
	// Full is Alarm, or less than Reserve left under Limit (counting
	// Pending): writes that add data are refused.
	Full bool
	// Recoveries counts the times the store went from full back to not
	// full since the monitor started.
	Recoveries int64
	// Setting names what sets the quota, for messages (see SpaceOptions).
	Setting string
	// Checked is when the space was last read; zero before the first time.
	Checked time.Time
}

// String describes the space for messages: "61.2Mi used of its 64Mi quota
// (set by ...)", and etcd's alarm when it is raised.
func (sp Space) String() string {
	if sp.Quota == 0 {
		return "its size is not known yet"
	}
	s := fmt.Sprintf("%s used of its %s quota", FormatBytes(sp.Size), FormatBytes(sp.Quota))
	if sp.Setting != "" {
		s += " (set by " + sp.Setting + ")"
	}
	if sp.Alarm {
		s += "; etcd's no-space alarm is raised"
	}
	return s
}

// SpaceError is the error of a write refused for lack of space;
// errors.Is(err, ErrNoSpace) holds for it.
type SpaceError struct {
	// Space is the store's space as last checked (the zero Space when no
	// monitor runs).
	Space Space
	// Need is what the refused write would have added, when Fits refused
	// it; 0 when etcd did.
	Need int64
	// Limit is the size the write had to stay under, when Fits refused it:
	// Space.Limit for a write that adds data, Space.Quota for another.
	Limit int64
	cause error
}

func (e *SpaceError) Error() string {
	if e.Need == 0 {
		return fmt.Sprintf("%v: etcd's database is full (%s): %v", ErrNoSpace, e.Space, e.cause)
	}
	return fmt.Sprintf("%v: the write needs %s, the store stays under %s (%s)",
		ErrNoSpace, FormatBytes(e.Need), FormatBytes(e.Limit), e.Space)
}

// Is makes errors.Is(err, ErrNoSpace) hold.
func (e *SpaceError) Is(target error) bool { return target == ErrNoSpace }

// Unwrap returns etcd's error, if any.
func (e *SpaceError) Unwrap() error { return e.cause }

// SpaceOptions configures a space monitor.
type SpaceOptions struct {
	// Quota is assumed when etcd does not report its own (before etcd
	// 3.6); default DefaultQuota.
	Quota int64
	// Setting names what sets the quota in messages, e.g. "cairn server
	// --store-quota"; default "the store quota".
	Setting string
	// Interval is how often Run checks; default DefaultSpaceInterval.
	Interval time.Duration
	// Reserve is the room left under the soft limit below which the store
	// counts as full: at least what the largest single write adds, so that
	// a store that refuses a write for lack of space also says it is full;
	// default DefaultReserve.
	Reserve int64
	// KeepHistory is the history a full store's compaction keeps, so that
	// lists read page by page and watches behind by less go on; default
	// DefaultKeepHistory, negative for none (compact to the current
	// revision at once).
	KeepHistory time.Duration
	// Logger; default slog.Default().
	Logger *slog.Logger
}

// SpaceMonitor keeps track of the store's space and recovers a full
// store. It is safe for concurrent use.
type SpaceMonitor struct {
	s    *Store
	opts SpaceOptions
	log  *slog.Logger
	wake chan struct{}

	mu sync.Mutex
	// cur is the space at the last check (Full as found then), with
	// Pending updated since.
	cur Space

	// compactMu serializes Recover's compactions; mark is the revision a
	// full store was at when first seen so (or last compacted), and when.
	compactMu sync.Mutex
	mark      struct {
		rev int64
		at  time.Time
	}
}

// DefaultKeepHistory is the history a full store's compaction keeps by
// default (SpaceOptions.KeepHistory): lists read page by page and watches
// that are behind by less than this go on, where a compaction to the
// current revision would cut every list in progress.
const DefaultKeepHistory = 5 * time.Second

// MonitorSpace attaches a space monitor to s and returns it. From then on
// Space and Fits answer from it, and a write etcd refuses for lack of space
// wakes it. Call it once, before the store serves writes; call Check (or
// Run) to read the space.
func (s *Store) MonitorSpace(opts SpaceOptions) *SpaceMonitor {
	if opts.Quota <= 0 {
		opts.Quota = DefaultQuota
	}
	if opts.Setting == "" {
		opts.Setting = "the store quota"
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultSpaceInterval
	}
	if opts.KeepHistory == 0 {
		opts.KeepHistory = DefaultKeepHistory
	}
	if opts.Reserve <= 0 {
		opts.Reserve = DefaultReserve
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &SpaceMonitor{s: s, opts: opts, log: opts.Logger, wake: make(chan struct{}, 1)}
	s.space.Store(m)
	return m
}

// Space returns the store's space as last checked: the zero Space when no
// monitor is attached or before its first check. It does not block.
func (s *Store) Space() Space {
	if m := s.space.Load(); m != nil {
		return m.Space()
	}
	return Space{}
}

// Fits reports whether writing ops leaves the store under its limits, by
// the space last checked plus what was written since: a write that adds
// data (grow) must stay under the soft limit and is refused while the
// store is full; any other write (a deletion mark, a write that does not
// make an object larger) must stay under the quota, where etcd would raise
// its alarm. It returns nil, or a *SpaceError (ErrNoSpace). Deletions cost
// nothing and always fit; so does everything while the space is unknown.
// It does not block.
func (s *Store) Fits(grow bool, ops ...Op) error {
	m := s.space.Load()
	if m == nil {
		return nil
	}
	cost := putCost(ops)
	if cost == 0 {
		return nil
	}
	sp := m.Space()
	if sp.Quota == 0 {
		return nil
	}
	limit := sp.Quota
	if grow {
		limit = sp.Limit
	}
	if (grow && sp.Full) || sp.Size+sp.Pending+cost >= limit {
		return &SpaceError{Space: sp, Need: cost, Limit: limit}
	}
	return nil
}

// noSpace completes a *SpaceError from etcd with the space last checked,
// and wakes the monitor to check again at once.
func (s *Store) noSpace(err error) error {
	m := s.space.Load()
	var se *SpaceError
	if m == nil || !errors.As(err, &se) {
		return err
	}
	se.Space = m.Space()
	m.nudge()
	return err
}

// Space returns the space as last checked, with what was written since.
// It does not block.
func (m *SpaceMonitor) Space() Space {
	m.mu.Lock()
	defer m.mu.Unlock()
	sp := m.cur
	sp.Full = sp.Full || sp.full()
	return sp
}

// full reports whether sp is full, counting what was written since it was
// checked.
func (sp Space) full() bool {
	return sp.Quota > 0 && (sp.Alarm || sp.Size+sp.Pending >= sp.Limit-sp.Reserve)
}

func (m *SpaceMonitor) nudge() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *SpaceMonitor) wrote(cost int64) {
	if cost == 0 {
		return
	}
	m.mu.Lock()
	m.cur.Pending += cost
	m.mu.Unlock()
}

// member is one etcd member's share of a check.
type member struct {
	endpoint    string
	size, inUse int64
}

// Check reads the space from etcd now: each endpoint's status and the
// cluster's alarms. It blocks for one Status per endpoint and one
// AlarmList, within ctx. When no endpoint answers it keeps the space last
// checked and returns the store's error (ErrUnavailable, ErrTimeout).
func (m *SpaceMonitor) Check(ctx context.Context) (Space, error) {
	sp, _, err := m.check(ctx)
	return sp, err
}

func (m *SpaceMonitor) check(ctx context.Context) (Space, []member, error) {
	if err := m.s.closed(); err != nil {
		return m.Space(), nil, err
	}
	cli := m.s.cli
	sp := Space{Setting: m.opts.Setting}
	var members []member
	var lastErr error
	for _, ep := range cli.Endpoints() {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			lastErr = err
			continue
		}
		members = append(members, member{endpoint: ep, size: st.DbSize, inUse: st.DbSizeInUse})
		if st.DbSize > sp.Size {
			sp.Size, sp.InUse = st.DbSize, st.DbSizeInUse
		}
		if q := st.DbSizeQuota; q > 0 && (sp.Quota == 0 || q < sp.Quota) {
			sp.Quota = q
		}
	}
	if len(members) == 0 {
		return m.Space(), nil, fmt.Errorf("store: check the space: %w", m.s.classify(lastErr))
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		return m.Space(), nil, fmt.Errorf("store: check the space: %w", m.s.classify(err))
	}
	for _, a := range alarms.Alarms {
		sp.Alarm = sp.Alarm || a.Alarm == pb.AlarmType_NOSPACE
	}
	if sp.Quota == 0 {
		sp.Quota = m.opts.Quota
	}
	sp.Limit = sp.Quota - sp.Quota*HeadroomPercent/100
	sp.Reserve = min(m.opts.Reserve, sp.Limit/2)
	sp.Checked = time.Now()
	sp.Full = sp.full()

	// Recoveries and the log follow what checks find, not what Pending
	// estimates between them.
	m.mu.Lock()
	was := m.cur
	sp.Recoveries = was.Recoveries
	if was.Full && !sp.Full {
		sp.Recoveries++
	}
	m.cur = sp
	m.mu.Unlock()
	switch {
	case sp.Full && !was.Full:
		m.log.Warn("the store is full: writes that add data are refused until space is freed", "space", sp.String())
	case was.Full && !sp.Full:
		m.log.Info("the store is no longer full: it accepts writes again", "space", sp.String())
	}
	return sp, members, nil
}

// Run checks the space every Interval, and soon after etcd refused a write
// for lack of space, until ctx is done. While the store is full it
// recovers it without an operator, in three idempotent steps: it compacts
// the history to the current revision; it defragments each full member
// whose data leaves half the headroom free below the full mark; and it
// disarms etcd's NOSPACE alarm once the size is under the soft limit. It needs no leader (etcd
// grants no lease on a full store): every server runs it. It blocks;
// failures are logged and retried at the next check.
func (m *SpaceMonitor) Run(ctx context.Context) {
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	minGap := min(m.opts.Interval, time.Second) / 2
	for {
		m.round(ctx)
		last := time.Now()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.wake:
			// Many refused writes wake the monitor at once: check at most
			// every minGap.
			select {
			case <-ctx.Done():
				return
			case <-time.After(minGap - time.Since(last)):
			}
		}
	}
}

// round is one check, and one recovery when the store is full.
func (m *SpaceMonitor) round(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	sp, err := m.Check(cctx)
	if err == nil && sp.Full {
		err = m.Recover(ctx)
	}
	if err != nil && ctx.Err() == nil {
		m.log.Warn("space monitor", "err", err)
	}
}

// Recover frees what can be freed on a full store, as Run does; on a store
// that is not full it only checks. It blocks for a compaction, the
// defragmentations it decides on (each blocks its member), an alarm
// disarm and the checks around them, within ctx. It returns the store's
// errors.
func (m *SpaceMonitor) Recover(ctx context.Context) error {
	defer func() {
		if !m.Space().Full {
			m.compactMu.Lock()
			m.mark.rev = 0 // the next time it fills, history counts from then
			m.compactMu.Unlock()
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	sp, _, err := m.check(cctx)
	if err != nil || !sp.Full {
		return err
	}
	if err := m.compact(cctx); err != nil {
		return err
	}
	sp, members, err := m.check(cctx)
	if err != nil {
		return err
	}
	// Defragment a full member once its data leaves half the headroom
	// free below the full mark: the store then stays out of it for a
	// while, instead of defragmenting at every write.
	full := sp.Limit - sp.Reserve
	target := full - (sp.Quota-sp.Limit)/2
	for _, mb := range members {
		if mb.size < full || mb.inUse > target {
			continue // not full, or defragmenting would not free enough
		}
		dctx, dcancel := context.WithTimeout(ctx, defragTimeout)
		_, err := m.s.cli.Defragment(dctx, mb.endpoint)
		dcancel()
		if err != nil {
			return fmt.Errorf("store: defragment %s: %w", mb.endpoint, m.s.classify(err))
		}
		m.log.Info("defragmented a full store", "endpoint", mb.endpoint, "sizeBefore", mb.size, "inUse", mb.inUse)
	}
	if sp, _, err = m.check(cctx); err != nil || !sp.Alarm || sp.Size >= sp.Limit {
		return err
	}
	alarms, err := m.s.cli.AlarmList(cctx)
	if err != nil {
		return fmt.Errorf("store: list alarms: %w", m.s.classify(err))
	}
	for _, a := range alarms.Alarms {
		if a.Alarm != pb.AlarmType_NOSPACE {
			continue
		}
		if _, err := m.s.cli.AlarmDisarm(cctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: a.Alarm}); err != nil {
			return fmt.Errorf("store: disarm the no-space alarm: %w", m.s.classify(err))
		}
		m.log.Info("disarmed etcd's no-space alarm", "member", fmt.Sprintf("%x", a.MemberID))
	}
	_, _, err = m.check(cctx)
	return err
}

// compact drops the history of a full store older than KeepHistory: it
// compacts to the revision the store was at when last marked, once that is
// KeepHistory old, and marks the current revision. The first call only
// marks. With a negative KeepHistory it compacts to the current revision.
func (m *SpaceMonitor) compact(ctx context.Context) error {
	m.compactMu.Lock()
	defer m.compactMu.Unlock()
	rev, err := m.s.Revision(ctx)
	if err != nil {
		return err
	}
	to := m.mark.rev
	switch {
	case m.opts.KeepHistory < 0:
		to = rev
	case m.mark.rev == 0:
		m.mark.rev, m.mark.at = rev, time.Now()
		return nil
	case time.Since(m.mark.at) < m.opts.KeepHistory:
		return nil
	}
	if _, err := m.s.cli.Compact(ctx, to, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("store: compact a full store: %w", m.s.classify(err))
	}
	m.mark.rev, m.mark.at = rev, time.Now()
	return nil
}
