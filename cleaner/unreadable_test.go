package cleaner_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner"
	"cairn.dev/cairn/internal/testkit"
)

// A Cleaner whose condition input cannot be read (an error, not NotFound)
// deletes nothing and says why in its status, even though its condition
// holds when that input is absent; once reads work again, the input is
// found truly absent and the Cleaner deletes.
func TestCleaner_UnreadableInputDeletesNothingAndSaysWhy(t *testing.T) {
	e := newEnv(t)
	victim := e.create(testkit.Object(api.KindDataObject, ns, "victim"))
	fr := testkit.NewFailingReads(e.c, api.KindSecret)
	e.startWith(fr, cleaner.Options{SyncTimeout: 200 * time.Millisecond}, nil)
	e.createCleaner("c", api.CleanerSpec{
		Retry: api.CleanerRetry{Period: api.Duration{Duration: time.Second}},
		Targets: []api.CleanerTarget{
			secretTarget("s", "s", false),
			{Name: "victim", Reference: api.TargetReference{Kind: api.KindDataObject, Name: victim.Name}, Delete: true},
		},
		Conditions: []string{`s == null`},
	})
	c := e.waitPhase("c", api.CleanerFailed)
	if le := c.Status.LastError; le == nil || le.Reason != api.CleanerReasonUnresolvableTarget || !strings.Contains(le.Message, "Secret") {
		t.Fatalf("lastError %+v: want %s naming the kind it could not read", le, api.CleanerReasonUnresolvableTarget)
	}
	if e.gone(api.KindDataObject, "victim") {
		t.Fatal("the Cleaner deleted a target while its condition input could not be read")
	}
	fr.Fail(false)
	testkit.EventuallyNil(t, wait, "the victim deleted once the input is found absent", func() error {
		if !e.gone(api.KindDataObject, "victim") {
			c, _ := e.getCleaner("c")
			return fmt.Errorf("victim still there; cleaner %+v", c)
		}
		return nil
	})
}
