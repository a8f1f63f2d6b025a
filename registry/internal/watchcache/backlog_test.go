package watchcache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
)

// drain reads w until its stream ends and returns the changes it got
// ("TYPE namespace/name") and the last resourceVersion received.
func drain(t *testing.T, w api.Watcher) (got []string, last int64) {
	t.Helper()
	for ev := range w.Events() {
		last = rvOf(t, ev.Object.ResourceVersion)
		if ev.Type != api.Bookmark {
			got = append(got, ev.Type+" "+api.Key(ev.Object.Namespace, ev.Object.Name))
		}
	}
	return got, last
}

func rvOf(t *testing.T, rv string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(rv, &n); err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

func TestWatcher_TooFarBehindIsEndedBeforeTheRingIsFullAndResumesWithNothingLost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		size   int  // of each object's data
		direct bool // the watch starts before the ring's window: a watch of its own
	}{
		{"from the ring, count bound", Options{WatcherBacklog: 10}, 0, false},
		{"from the ring, byte bound", Options{WatcherBacklogBytes: 16 << 10}, 2 << 10, false},
		{"of its own, count bound", Options{Capacity: 5, WatcherBacklog: 10}, 0, true},
		{"of its own, byte bound", Options{Capacity: 5, WatcherBacklogBytes: 16 << 10}, 2 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, tc.opts)
			from := h.rev()
			h.watch("default", "", from) // starts the cache
			var want []string
			write := func(name string) {
				h.put("default", name, nil, strings.Repeat("x", tc.size))
				want = append(want, "ADDED default/"+name)
			}
			if tc.direct {
				for i := range 8 { // more than the ring keeps: from falls out of its window
					write(fmt.Sprintf("a%d", i))
				}
			}
			// (The cache may not have seen the writes above yet, and so
			// still hold from in its window: watch again until it has.)
			w := h.watch("default", "", from)
			for try := 0; Shared(w) == tc.direct; try++ {
				if try == 100 {
					t.Fatalf("served from the ring = %v, want %v", Shared(w), !tc.direct)
				}
				w.Stop()
				time.Sleep(20 * time.Millisecond)
				w = h.watch("default", "", from)
			}
			// The consumer reads nothing while more changes arrive than
			// its channel holds (so the watcher waits on a full channel
			// and checks its backlog), far fewer than the ring holds.
			for i := range 2 * chanCap {
				write(fmt.Sprintf("b%d", i))
			}
			got, last := drain(t, w)
			if err := w.Err(); !errors.Is(err, api.ErrTooManyRequests) {
				t.Fatalf("the watcher that fell behind ended with %v, want TooManyRequests", err)
			}
			if len(got) >= len(want) {
				t.Fatalf("the watcher got all %d changes: it was not ended for its backlog", len(got))
			}
			if !tc.direct {
				if u := h.cache().usage(); u.entries >= DefaultCapacity || u.bytes >= DefaultMaxBytes {
					t.Fatalf("the ring is full (%+v): the watcher should have been ended before", u)
				}
			}
			// It watches again from the last version it received, as
			// often as it takes, and misses nothing.
			got = resume(t, h, got, last, len(want))
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("changes received:\n%v\nwant each once, in order:\n%v", got, want)
			}
		})
	}
}

// resume watches namespace default from version last, again after each
// TooManyRequests, as an informer does, until it has n changes in got.
func resume(t *testing.T, h *harness, got []string, last int64, n int) []string {
	t.Helper()
	for round := 0; len(got) < n; round++ {
		if round == 100 {
			t.Fatalf("still %d of %d changes after %d watches", len(got), n, round)
		}
		w := h.watch("default", "", last)
		for len(got) < n {
			ev, ok := <-w.Events()
			if !ok {
				if err := w.Err(); !errors.Is(err, api.ErrTooManyRequests) {
					t.Fatalf("the resumed watch ended with %v", err)
				}
				break
			}
			last = rvOf(t, ev.Object.ResourceVersion)
			if ev.Type != api.Bookmark {
				got = append(got, ev.Type+" "+api.Key(ev.Object.Namespace, ev.Object.Name))
			}
		}
		w.Stop()
	}
	return got
}

func TestWatcher_KeepingUpIsNeverEnded(t *testing.T) {
	h := start(t, Options{WatcherBacklog: 3, WatcherBacklogBytes: 8 << 10})
	w := h.watch("default", "", h.rev())
	for i := range 50 { // far more changes, and bytes, than the bounds, read as they come
		name := fmt.Sprintf("k%d", i)
		h.put("default", name, nil, strings.Repeat("x", 1<<10))
		expect(t, w, "ADDED default/"+name)
	}
}

// sliceList is an Initial over objects; it fails with err after them when
// err is set.
type sliceList struct {
	objs []*api.Object
	err  error
}

func (l *sliceList) Next(context.Context) (*api.Object, error) {
	if len(l.objs) == 0 {
		if l.err != nil {
			return nil, l.err
		}
		return nil, io.EOF
	}
	o := l.objs[0]
	l.objs = l.objs[1:]
	return o, nil
}

func TestWatcher_InitialListIsSentFirstAndItsFailureEndsTheWatch(t *testing.T) {
	failure := api.NewExpired("compacted")
	for _, tc := range []struct {
		name    string
		direct  bool
		err     error
		wantErr error
	}{
		{"from the ring", false, nil, nil},
		{"of its own", true, nil, nil},
		{"from the ring, failing", false, failure, api.ErrExpired},
		{"of its own, failing", true, failure, api.ErrExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, Options{Capacity: 2})
			from := h.rev()
			h.watch("default", "", from)
			if tc.direct {
				for i := range 4 {
					h.put("other", fmt.Sprintf("x%d", i), nil, "")
				}
			}
			var objs []*api.Object
			for i := range 3 {
				o := &api.Object{TypeMeta: api.TypeMeta{Kind: "Thing"}}
				o.Namespace, o.Name, o.ResourceVersion = "default", fmt.Sprintf("i%d", i), fmt.Sprint(from)
				objs = append(objs, o)
			}
			c, err := h.cs.Cache(context.Background(), things, from)
			if err != nil {
				t.Fatal(err)
			}
			w := c.Watch(context.Background(), Request{NS: "default", Sel: Selection{Labels: labels.Everything()}, RV: from, Initial: &sliceList{objs: slices.Clone(objs), err: tc.err}})
			// (The cache may not have seen the writes above yet, and so
			// still hold from in its window: watch again until it has.)
			for try := 0; Shared(w) == tc.direct; try++ {
				if try == 100 {
					t.Fatalf("served from the ring = %v, want %v", Shared(w), !tc.direct)
				}
				w.Stop()
				time.Sleep(20 * time.Millisecond)
				w = c.Watch(context.Background(), Request{NS: "default", Sel: Selection{Labels: labels.Everything()}, RV: from, Initial: &sliceList{objs: slices.Clone(objs), err: tc.err}})
			}
			t.Cleanup(w.Stop)
			h.put("default", "live", nil, "")
			if tc.err != nil {
				got, _ := drain(t, w)
				if err := w.Err(); !errors.Is(err, tc.wantErr) || len(got) != 3 {
					t.Fatalf("got %v, then %v; want the 3 initial objects, then %v", got, err, tc.wantErr)
				}
				return
			}
			expect(t, w, "ADDED default/i0", "ADDED default/i1", "ADDED default/i2", "ADDED default/live")
		})
	}
}
