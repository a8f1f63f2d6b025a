package testkit_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/kinds"
	"cairn.dev/cairn/server/servertest"
)

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the calling goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	panic(f)
}

// failure calls wait on a fatalRecorder and returns the failure message
// ("" when it returned normally).
func failure(t *testing.T, wait func(testing.TB)) string {
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != rec {
				panic(p)
			}
		}()
		wait(rec)
	}()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.msg
}

// runEventually calls Eventually on a fatalRecorder and returns the failure
// message ("" when it returned normally).
func runEventually(t *testing.T, timeout time.Duration, what string, cond func() bool) string {
	return failure(t, func(tb testing.TB) { testkit.Eventually(tb, timeout, what, cond) })
}

func TestEventuallyNil_ReturnsOnceCheckPassesAndFailsWithItsLastError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		msg := failure(t, func(tb testing.TB) {
			testkit.EventuallyNil(tb, time.Second, "the third call", func() error {
				if n++; n < 3 {
					return fmt.Errorf("call %d", n)
				}
				return nil
			})
		})
		if msg != "" || n != 3 {
			t.Errorf("after %d calls: failure %q, want none after 3 calls", n, msg)
		}

		start := time.Now()
		n = 0
		msg = failure(t, func(tb testing.TB) {
			testkit.EventuallyNil(tb, 5*time.Second, "the impossible", func() error { n++; return fmt.Errorf("still %d", n) })
		})
		if !strings.Contains(msg, "the impossible") || !strings.Contains(msg, fmt.Sprintf("still %d", n)) {
			t.Errorf("failure message %q does not name what was awaited and the last error (still %d)", msg, n)
		}
		if waited := time.Since(start); waited < 5*time.Second {
			t.Errorf("gave up after %v, want >= the 5s timeout", waited)
		}
	})
}

func TestEventually_ReturnsOnceConditionHoldsAndFailsNamingWhatOnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		if msg := runEventually(t, time.Second, "the third call", func() bool { n++; return n == 3 }); msg != "" {
			t.Errorf("Eventually failed although the condition came true: %s", msg)
		}
		if n != 3 {
			t.Errorf("condition called %d times, want 3 (stop once true)", n)
		}

		start := time.Now()
		msg := runEventually(t, 5*time.Second, "the impossible", func() bool { return false })
		if !strings.Contains(msg, "the impossible") {
			t.Errorf("failure message %q does not name what was awaited", msg)
		}
		if waited := time.Since(start); waited < 5*time.Second {
			t.Errorf("gave up after %v, want >= the 5s timeout", waited)
		}
	})
}

func TestObject_BuildersSetWhatTheirOptionsSay(t *testing.T) {
	owner := testkit.Object(api.KindSecret, "ns", "owner")
	owner.UID = "u-1"
	o := testkit.Widget("ns", "w",
		testkit.Labels("a", "1", "b", "2"), testkit.LabelMap(map[string]string{"c": "3"}),
		testkit.Annotations("note", "x"), testkit.OwnedBy(owner), testkit.ControlledBy(owner),
		testkit.Finalizers("f1", "f2"), testkit.Spec(`{"size":3}`), testkit.Status(`{"phase":"Ready"}`))
	if o.Kind != testkit.KindWidget || o.APIVersion != api.APIVersion || o.Namespace != "ns" || o.Name != "w" {
		t.Errorf("type or name = %v %v", o.TypeMeta, o.ObjectMeta)
	}
	if len(o.Labels) != 3 || o.Labels["a"] != "1" || o.Labels["c"] != "3" || o.Annotations["note"] != "x" {
		t.Errorf("labels %v annotations %v", o.Labels, o.Annotations)
	}
	want := []api.OwnerReference{api.OwnerRefTo(owner, false), api.OwnerRefTo(owner, true)}
	if len(o.OwnerReferences) != 2 || o.OwnerReferences[0] != want[0] || o.OwnerReferences[1] != want[1] {
		t.Errorf("owner references = %+v, want %+v", o.OwnerReferences, want)
	}
	if strings.Join(o.Finalizers, ",") != "f1,f2" {
		t.Errorf("finalizers = %v", o.Finalizers)
	}
	if string(o.Field("spec")) != `{"size":3}` || string(o.Field("status")) != `{"phase":"Ready"}` {
		t.Errorf("spec %s status %s", o.Field("spec"), o.Field("status"))
	}
	if g := testkit.Secret("ns", "", nil, testkit.GenerateName("gen-")); g.GenerateName != "gen-" || g.Name != "" {
		t.Errorf("generateName %q name %q, want gen- and none", g.GenerateName, g.Name)
	}
	s := testkit.Secret("ns", "s", map[string]string{"k": "v"})
	var data map[string]string
	if err := json.Unmarshal(s.Field("data"), &data); err != nil || data["k"] != base64.StdEncoding.EncodeToString([]byte("v")) {
		t.Errorf("secret data = %s (%v), want base64 of v", s.Field("data"), err)
	}
	if sd := testkit.Secret("ns", "s", nil, testkit.StringData(map[string]string{"k": "v"})); string(sd.Field("stringData")) != `{"k":"v"}` || sd.Field("data") != nil {
		t.Errorf("stringData %s data %s, want the plain value in stringData only", sd.Field("stringData"), sd.Field("data"))
	}
}

func TestContext_EndsAtCleanup(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) {
		ctx = testkit.Context(t)
		if err := ctx.Err(); err != nil {
			t.Fatalf("context ended during the test: %v", err)
		}
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > 30*time.Second {
			t.Errorf("deadline %v (set %v), want one at most 30s away", d, ok)
		}
	})
	if ctx.Err() == nil {
		t.Error("context still open after the test's cleanup")
	}
}

func TestWidgetKind_IsServedWithSpecAndStatus(t *testing.T) {
	srv := servertest.Start(t, servertest.WithKinds(append(kinds.All(kinds.Deps{}), testkit.WidgetKind())...))
	c := srv.Client(t)
	ctx := testkit.Context(t)
	w, err := c.Create(ctx, testkit.Widget("default", "w1", testkit.Spec(`{"size":3,"ref":"s1"}`)))
	if err != nil {
		t.Fatal(err)
	}
	// The server stores fields re-encoded (keys sorted), as kube-apiserver
	// does: the spec is the same JSON value, not the same bytes.
	if w.UID == "" || w.Generation != 1 || !sameJSON(w.Field("spec"), `{"size":3,"ref":"s1"}`) {
		t.Errorf("created widget: uid %q generation %d spec %s", w.UID, w.Generation, w.Field("spec"))
	}
	w.SetField("status", json.RawMessage(`{"phase":"Ready"}`))
	if w, err = c.UpdateStatus(ctx, w); err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(ctx, "wd", "default", "w1") // by its short name
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Field("status")) != `{"phase":"Ready"}` || got.Generation != 1 {
		t.Errorf("after status write: status %s generation %d", got.Field("status"), got.Generation)
	}
	if _, err := c.Patch(ctx, testkit.KindWidget, "default", "w1", []byte(`{"spec":{"size":4}}`), false); err != nil {
		t.Fatal(err)
	}
	if got, err = c.Get(ctx, testkit.KindWidget, "default", "w1"); err != nil || got.Generation != 2 {
		t.Errorf("after spec change: generation %d (%v), want 2", got.Generation, err)
	}
}

// sameJSON reports whether raw and want are the same JSON value.
func sameJSON(raw json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(raw, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && reflect.DeepEqual(a, b)
}
