package cleaner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/internal/testkit"
)

// A deletion the API refuses for a reason other than the creator's rights
// (here: the target is under deletion protection) is in the Cleaner's
// lastError as WriteRefused with the API's reason and message, not as the
// creator's Forbidden; once the protection is lifted the retry deletes the
// target and the Cleaner.
func TestCleaner_RefusedDeletionIsInLastErrorAsWriteRefused(t *testing.T) {
	e := newEnv(t)
	e.secret("s", testkit.Labels("preview", "closed"), testkit.Annotations(api.AnnotationDeletionProtection, "true"))
	e.start(nil)
	e.createCleaner("c", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "s", true)}, Conditions: []string{closed}})
	testkit.EventuallyNil(t, wait, "lastError naming the refused deletion", func() error {
		c, err := e.getCleaner("c")
		if err != nil {
			return err
		}
		le := c.Status.LastError
		if le == nil || le.Reason != api.ReasonWriteRefused || !strings.Contains(le.Message, "Forbidden") ||
			!strings.Contains(le.Message, api.AnnotationDeletionProtection) {
			return fmt.Errorf("lastError %+v", le)
		}
		return nil
	})
	if e.gone(api.KindSecret, "s") || e.gone(api.KindCleaner, "c") {
		t.Fatal("a protected target's Cleaner went on deleting")
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, api.AnnotationDeletionProtection)
	if _, err := e.c.Patch(context.Background(), api.KindSecret, ns, "s", patch, false); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, wait, "the target and the Cleaner deleted once the protection is lifted", func() bool {
		return e.gone(api.KindSecret, "s") && e.gone(api.KindCleaner, "c")
	})
}
