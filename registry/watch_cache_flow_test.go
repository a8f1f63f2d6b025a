package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/registry"
)

func TestWatchCache_SlowConsumerIsEndedWithoutBlockingOthers(t *testing.T) {
	for _, b := range bounds {
		t.Run(b.name, func(t *testing.T) {
			testSlowConsumer(t, b.capacity, b.maxBytes)
		})
	}
}

func testSlowConsumer(t *testing.T, capacity int, maxBytes int64) {
	const changes = 300
	r, s := newBoundedRegistry(t, capacity, maxBytes, time.Hour)
	from := currentRV(t, s)
	slow := mustWatch(t, r, "default", from, "")
	fast := mustWatch(t, r, "default", from, "")
	done := make(chan []string)
	go func() {
		var seen []string
		for len(seen) < changes {
			ev, ok := <-fast.Events()
			if !ok {
				break
			}
			seen = append(seen, ev.Object.Name)
		}
		done <- seen
	}()
	var want []string
	for i := range changes {
		want = append(want, fmt.Sprintf("s%d", i))
		mustCreate(t, r, bigSecret("default", want[i]))
	}
	select {
	case seen := <-done:
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Fatalf("the fast watcher saw %v", seen)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the fast watcher was held up by the slow one")
	}
	// The slow watcher gets a prefix of the changes, in order, then its end.
	var got []string
	last := from
	for ev := range slow.Events() {
		got = append(got, ev.Object.Name)
		last = ev.Object.ResourceVersion
	}
	if err := slow.Err(); !errors.Is(err, api.ErrTooManyRequests) {
		t.Fatalf("slow watcher ended with %v, want TooManyRequests", err)
	}
	if len(got) >= changes || fmt.Sprint(got) != fmt.Sprint(want[:len(got)]) {
		t.Fatalf("slow watcher saw %d changes: %v", len(got), got)
	}
	// Resuming from its last version loses and repeats nothing.
	resumed := mustWatch(t, r, "default", last, "")
	var rest []string
	for _, n := range want[len(got):] {
		rest = append(rest, "ADDED default/"+n)
	}
	expectChanges(t, resumed, rest...)
}

func TestWatchCache_BookmarksReachEveryWatcher(t *testing.T) {
	r, s := newCachedRegistry(t, 0, 50*time.Millisecond)
	from := currentRV(t, s)
	ws := []api.Watcher{mustWatch(t, r, "default", from, ""), mustWatch(t, r, "", from, "app=none")}
	rv := rvOf(t, mustCreate(t, r, nsSecret("default", "s", nil)).ResourceVersion)
	for i, w := range ws {
		if !registry.ServedFromCache(w) {
			t.Fatalf("watcher %d is not served from the cache", i)
		}
		last := rvOf(t, from)
		deadline := time.After(20 * time.Second)
		for covered := false; !covered; {
			select {
			case ev := <-w.Events():
				got := rvOf(t, ev.Object.ResourceVersion)
				if got < last {
					t.Fatalf("watcher %d: %s at %d after %d", i, ev.Type, got, last)
				}
				last = got
				covered = ev.Type == api.Bookmark && got >= rv
			case <-deadline:
				t.Fatalf("watcher %d: no bookmark covering %d", i, rv)
			}
		}
	}
}

func TestWatchCache_StopCancelAndCloseReleaseGoroutines(t *testing.T) {
	r, s := newCachedRegistry(t, 0, 50*time.Millisecond)
	ctx := sysCtx()
	mustWatch(t, r, "default", currentRV(t, s), "").Stop() // the cache now runs
	waitGoroutines := func(max int) {
		t.Helper()
		testkit.EventuallyNil(t, 10*time.Second, fmt.Sprintf("at most %d goroutines", max), func() error {
			if n := runtime.NumGoroutine(); n > max {
				return goroutineDump(n)
			}
			return nil
		})
	}
	base := runtime.NumGoroutine()
	cctx, cancel := context.WithCancel(ctx)
	var ws []api.Watcher
	const watchers = 200
	for i := range watchers {
		wctx := ctx
		if i%2 == 0 {
			wctx = cctx
		}
		w, err := r.Watch(wctx, "Secret", "", api.ListOptions{ResourceVersion: currentRV(t, s)})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	mustCreate(t, r, nsSecret("default", "s", nil))
	if n := runtime.NumGoroutine(); n < base+watchers {
		t.Fatalf("%d goroutines with %d watchers open, base %d: the count does not see them", n, watchers, base)
	}
	cancel()
	for i, w := range ws {
		if i%2 == 1 {
			w.Stop()
			w.Stop() // idempotent
		}
		for range w.Events() { // closed after Stop or cancellation
		}
		if err := w.Err(); err != nil {
			t.Fatalf("watcher %d ended with %v, want nil", i, err)
		}
	}
	waitGoroutines(base + 10) // loosely: the store's client and server come and go too

	open := mustWatch(t, r, "default", currentRV(t, s), "")
	r.Close()
	r.Close() // idempotent
	for range open.Events() {
	}
	if err := open.Err(); api.ReasonOf(err) != api.ReasonUnavailable {
		t.Fatalf("watch open at Close ended with %v, want ServiceUnavailable", err)
	}
	if _, err := r.Watch(ctx, "Secret", "default", api.ListOptions{}); api.ReasonOf(err) != api.ReasonUnavailable {
		t.Fatalf("watch after Close: %v, want ServiceUnavailable", err)
	}
	waitGoroutines(base + 10) // nothing was left behind by Close
}

func TestWatchCache_EventsCarryTheirObjectsJSON(t *testing.T) {
	r, s := newCachedRegistry(t, 0, time.Hour)
	ctx := sysCtx()
	from := currentRV(t, s)
	ws := []api.Watcher{mustWatch(t, r, "default", from, ""), mustWatch(t, r, "", from, "")}
	o := nsSecret("default", "e", nil)
	o.Annotations = map[string]string{"html": "<a & b>"} // escaped alike
	mustCreate(t, r, o)
	if _, err := r.Patch(ctx, "Secret", "default", "e", []byte(`{"stringData":{"k":"w"}}`), false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Delete(ctx, "Secret", "default", "e", api.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{api.Added, api.Modified, api.Deleted} {
		var first json.RawMessage
		for i, w := range ws {
			ev := nextChange(t, w)
			if ev.Type != typ {
				t.Fatalf("watcher %d: event %s, want %s", i, ev.Type, typ)
			}
			want, err := json.Marshal(ev.Object)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ev.Raw, want) {
				t.Fatalf("watcher %d: %s carries\n%s\nwant json.Marshal's\n%s", i, typ, ev.Raw, want)
			}
			if first == nil {
				first = ev.Raw
			} else if &first[0] != &ev.Raw[0] {
				t.Fatalf("%s: each watcher got its own encoding, not the shared one", typ)
			}
		}
	}
}

// goroutineDump is an error saying that n goroutines run; its text, made
// when it is printed, holds the stack of every goroutine.
type goroutineDump int

func (n goroutineDump) Error() string {
	buf := make([]byte, 1<<20)
	return fmt.Sprintf("%d goroutines:\n%s", int(n), buf[:runtime.Stack(buf, true)])
}
