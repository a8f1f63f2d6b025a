package cleaner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/internal/testkit"
)

const closed = `s.metadata.labels["preview"] == "closed"`

func TestCleaner_DeletesMarkedTargetsThenItselfOnceTTLPassedAndConditionsHold(t *testing.T) {
	e := newEnv(t)
	r := e.start(nil)
	e.secret("s", testkit.Labels("preview", "closed"))
	e.secret("keep")
	e.createCleaner("c", api.CleanerSpec{
		Targets:    []api.CleanerTarget{secretTarget("s", "s", true), secretTarget("keep", "keep", false)},
		Conditions: []string{closed, `keep != null`},
	})
	testkit.Eventually(t, wait, "the target and the cleaner deleted", func() bool { return e.gone(api.KindSecret, "s") && e.gone(api.KindCleaner, "c") })
	if e.gone(api.KindSecret, "keep") {
		t.Fatal("a target not marked delete was deleted")
	}
	if st, ok := traceHas(t, r, "c", "every condition holds", "deleted Secret/s"); !ok {
		t.Errorf("trace %q does not show the deletion", st)
	}
}

func TestCleaner_WaitsUntilCreationPlusTTL(t *testing.T) {
	e := newEnv(t)
	r := e.start(nil)
	e.secret("s", testkit.Labels("preview", "closed"))
	e.createCleaner("c", api.CleanerSpec{TTL: api.Duration{Duration: time.Hour},
		Targets: []api.CleanerTarget{secretTarget("s", "s", true)}, Conditions: []string{closed}})
	c := e.waitPhase("c", api.CleanerWaiting)
	want := c.CreationTimestamp.Add(time.Hour + time.Second - 1).Truncate(time.Second) // rounded up to a second
	if c.Status.NextScheduledEvaluation == nil || !c.Status.NextScheduledEvaluation.Equal(want) {
		t.Fatalf("next evaluation %v, want %s", c.Status.NextScheduledEvaluation, want)
	}
	if at, ok := r.ctl.Schedule().When(ns + "/c"); !ok || !at.Equal(want) {
		t.Fatalf("scheduled at %s (%v), want %s: status must be true to the schedule", at, ok, want)
	}
	if e.gone(api.KindSecret, "s") || c.Status.LastEvaluation != nil {
		t.Fatal("evaluated or deleted before the TTL")
	}
	if st, ok := traceHas(t, r, "c", "next evaluation at "+want.Format(time.RFC3339)+" (creation + ttl)"); !ok {
		t.Errorf("trace %q does not say when and why", st)
	}
}

func TestCleaner_ConditionTurnedTrueByATargetChangeIsActedOnPromptly(t *testing.T) {
	e := newEnv(t)
	r := e.start(nil)
	e.secret("s", testkit.Labels("preview", "open"))
	e.createCleaner("c", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "s", true)}, Conditions: []string{closed}})
	c := e.waitPhase("c", api.CleanerPending)
	if next := c.Status.NextScheduledEvaluation; !afterPeriod(c.Status.LastEvaluation, next) {
		t.Fatalf("next evaluation %v, want an hour after the evaluation (retry.period)", next)
	}
	if st, ok := traceHas(t, r, "c", "condition 0 is false", "(retry.period)"); !ok {
		t.Errorf("trace %q does not say why it waits", st)
	}
	e.label(api.KindSecret, "s", "preview", "closed")
	// The period is an hour: only the target's change can act within the wait.
	testkit.Eventually(t, wait, "the cleaner acting on its target's change", func() bool {
		return e.gone(api.KindSecret, "s") && e.gone(api.KindCleaner, "c")
	})
}

func TestCleaner_MonotonicSearchSchedulesWhenConditionsBecomeTrue(t *testing.T) {
	e := newEnv(t)
	r := e.start(nil)
	at := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	after := fmt.Sprintf(`time > timestamp(%q)`, at.UTC().Format(time.RFC3339))
	e.createCleaner("monotonic", api.CleanerSpec{Retry: api.CleanerRetry{Monotonic: true}, Conditions: []string{after}})
	e.createCleaner("not-monotonic", api.CleanerSpec{Conditions: []string{after}})
	e.secret("s", testkit.Labels("preview", "open"))
	e.createCleaner("never", api.CleanerSpec{Retry: api.CleanerRetry{Monotonic: true},
		Targets: []api.CleanerTarget{secretTarget("s", "s", false)}, Conditions: []string{closed}})

	m := e.waitPhase("monotonic", api.CleanerPending)
	if next := m.Status.NextScheduledEvaluation; next == nil || next.Before(at) || next.Sub(at) > 2*time.Second {
		t.Errorf("monotonic: next evaluation %v, want just after %s", next, at)
	}
	if st, ok := traceHas(t, r, "monotonic", "(monotonic search"); !ok {
		t.Errorf("monotonic: trace %q does not name the search", st)
	}
	for _, name := range []string{"not-monotonic", "never"} {
		c := e.waitPhase(name, api.CleanerPending)
		if next := c.Status.NextScheduledEvaluation; !afterPeriod(c.Status.LastEvaluation, next) {
			t.Errorf("%s: next evaluation %v, want retry.period after %s", name, next, c.Status.LastEvaluation.Time)
		}
	}
}

func TestCleaner_SeesLabelSelectedTargetsAppearAndVanish(t *testing.T) {
	e := newEnv(t)
	e.start(nil)
	sel := func(name string) api.CleanerTarget {
		return api.CleanerTarget{Name: name, Reference: api.TargetReference{Kind: api.KindSecret,
			MatchLabels: map[string]string{"preview": "42"}}}
	}
	e.secret("a", testkit.Labels("preview", "42"))
	e.createCleaner("vanish", api.CleanerSpec{Targets: []api.CleanerTarget{sel("secrets")}, Conditions: []string{`secrets.items.size() == 0`}})
	e.createCleaner("appear", api.CleanerSpec{Targets: []api.CleanerTarget{sel("secrets")}, Conditions: []string{`secrets.items.size() >= 2`}})
	for _, name := range []string{"vanish", "appear"} {
		c := e.waitPhase(name, api.CleanerPending)
		if strings.Join(c.Status.ResolvedTargets, ",") != "Secret/a" {
			t.Fatalf("%s resolved %v, want Secret/a", name, c.Status.ResolvedTargets)
		}
	}
	e.secret("b") // not selected yet
	e.label(api.KindSecret, "b", "preview", "42")
	testkit.Eventually(t, wait, "the cleaner seeing a second selected secret", func() bool { return e.gone(api.KindCleaner, "appear") })
	e.del(api.KindSecret, "a")
	e.del(api.KindSecret, "b")
	testkit.Eventually(t, wait, "the cleaner seeing its selection empty", func() bool { return e.gone(api.KindCleaner, "vanish") })
}

func TestCleaner_WritesEachFailureInStatusAndKeepsWorking(t *testing.T) {
	e := newEnv(t)
	// The controller's client hides DataObjects: a target of that kind
	// cannot be resolved.
	r := e.start(hideKind{e.c, api.KindDataObject})
	e.secret("s", testkit.Labels("preview", "open"))
	nested := `s.metadata.name.split("").all(a, s.metadata.name.split("").all(b, s.metadata.name.split("").all(c, ` +
		`s.metadata.name.split("").all(d, s.metadata.name.split("").all(e, s.metadata.name.split("").all(f, ` +
		`s.metadata.name.split("").all(g, a+b+c+d+e+f+g != "")))))))`
	e.secret("abcdefghijklmnopqrstuvwxyz0123456789")
	for _, tc := range []struct {
		name    string
		reason  api.ErrorReason
		message string
		spec    api.CleanerSpec
	}{
		{"unresolvable", api.CleanerReasonUnresolvableTarget, "does not serve the kind DataObject", api.CleanerSpec{
			Targets:    []api.CleanerTarget{{Name: "d", Reference: api.TargetReference{Kind: api.KindDataObject, Name: "d"}}},
			Conditions: []string{`d == null`}}},
		{"evaluation-error", api.CleanerReasonEvaluationError, "condition 1: condition: evaluation failed", api.CleanerSpec{
			Targets: []api.CleanerTarget{secretTarget("s", "s", false)}, Conditions: []string{`true`, `s.metadata.labels["missing"] == "x"`}}},
		{"non-boolean", api.CleanerReasonNonBoolean, "condition 0: condition: result is not a boolean", api.CleanerSpec{
			Targets: []api.CleanerTarget{secretTarget("s", "s", false)}, Conditions: []string{`s.metadata.name`}}},
		{"cost", api.CleanerReasonEvaluationError, "", api.CleanerSpec{
			Targets:    []api.CleanerTarget{secretTarget("s", "abcdefghijklmnopqrstuvwxyz0123456789", false)},
			Conditions: []string{nested}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.createCleaner(tc.name, tc.spec)
			c := e.waitPhase(tc.name, api.CleanerFailed)
			le := c.Status.LastError
			if le == nil || le.Reason != tc.reason || !strings.Contains(le.Message, tc.message) {
				t.Fatalf("lastError %+v, want %s with %q", le, tc.reason, tc.message)
			}
			if tc.name == "cost" && !strings.Contains(le.Message, "cost limit") && !strings.Contains(le.Message, "timed out") {
				t.Fatalf("lastError %q does not name the cost limit", le.Message)
			}
			if c.Status.LastEvaluation == nil || c.Status.LastEvaluation.Error == "" || c.Status.NextScheduledEvaluation == nil {
				t.Fatalf("status %+v: want the failed evaluation and the next one", c.Status)
			}
			if st, ok := traceHas(t, r, tc.name, "Failed ("+string(tc.reason)+")"); !ok {
				t.Errorf("trace %q does not name the failure", st)
			}
		})
	}
	// Still working after all that.
	e.secret("t", testkit.Labels("preview", "closed"))
	e.createCleaner("after", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "t", true)}, Conditions: []string{closed}})
	testkit.Eventually(t, wait, "a later cleaner acting", func() bool { return e.gone(api.KindCleaner, "after") })
}

func TestCleaner_ExplainShowsConditionsVariablesWithSecretsRedactedAndTheNextEvaluation(t *testing.T) {
	e := newEnv(t)
	r := e.start(nil)
	e.secret("s", testkit.Labels("preview", "open"))
	e.createCleaner("c", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "s", true)},
		Conditions: []string{closed, `has(s.data.token)`}})
	c := e.waitPhase("c", api.CleanerPending)
	wants := []string{
		"target s (Secret/s, delete true, evaluated true) resolved to Secret/s",
		`condition 0 ` + "`" + closed + "`" + ` = false`,
		"condition 1 `has(s.data.token)` = true",
		`variable s = {`, `"token":"<redacted>"`,
		"Pending: condition 0 is false; next evaluation at " + c.Status.NextScheduledEvaluation.Format(time.RFC3339) + " (retry.period)",
	}
	st, _ := traceHas(t, r, "c", wants...)
	for _, want := range wants {
		if !containsStep(st, want) {
			t.Errorf("trace lacks %q:\n%s", want, strings.Join(st, "\n"))
		}
	}
	for _, s := range st {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "aHVudGVyMg") {
			t.Fatalf("trace step shows a secret value: %s", s)
		}
	}
}

// hideKind is a client that does not serve one kind.
type hideKind struct {
	client.Interface
	kind string
}

func (h hideKind) Kinds(ctx context.Context) ([]api.KindInfo, error) {
	ks, err := h.Interface.Kinds(ctx)
	var out []api.KindInfo
	for _, k := range ks {
		if k.Kind != h.kind {
			out = append(out, k)
		}
	}
	return out, err
}

func TestCleaner_RestartKeepsTheScheduleAndEvaluatesOverdueOnesAtOnce(t *testing.T) {
	e := newEnv(t)
	r1 := e.start(nil)
	e.secret("s", testkit.Labels("preview", "open"))
	e.secret("t", testkit.Labels("preview", "closed"))
	e.createCleaner("later", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "s", true)}, Conditions: []string{closed}})
	const ttl = 6 * time.Second
	overdue := e.createCleaner("overdue", api.CleanerSpec{TTL: api.Duration{Duration: ttl},
		Targets: []api.CleanerTarget{secretTarget("s", "t", true)}, Conditions: []string{closed}})
	later := e.waitPhase("later", api.CleanerPending)
	e.waitPhase("overdue", api.CleanerWaiting)
	r1.stop()
	if e.gone(api.KindCleaner, "overdue") {
		t.Fatalf("the first controller acted on overdue: its TTL (%s) passed before it stopped", ttl)
	}
	due := overdue.CreationTimestamp.Add(ttl)
	testkit.Eventually(t, wait, "overdue's time passing while no controller runs", func() bool { return time.Now().After(due) })

	r2 := e.start(nil)
	want := *later.Status.NextScheduledEvaluation
	if at, ok := r2.ctl.Schedule().When(ns + "/later"); !ok || !at.Equal(want) {
		t.Fatalf("after the restart later is scheduled at %s (%v), want %s from its status", at, ok, want)
	}
	testkit.Eventually(t, wait, "overdue evaluated at once after the restart", func() bool {
		return e.gone(api.KindSecret, "t") && e.gone(api.KindCleaner, "overdue")
	})
	got, err := e.getCleaner("later")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Status.LastEvaluation.Time.Equal(later.Status.LastEvaluation.Time) {
		t.Fatalf("later was evaluated again at %s: a restart must keep its schedule", got.Status.LastEvaluation.Time)
	}
}

// afterPeriod reports whether next is retry.period (the tests' hour) after
// the evaluation, rounded up to a whole second.
func afterPeriod(ev *api.CleanerEvaluation, next *time.Time) bool {
	if ev == nil || next == nil {
		return false
	}
	d := next.Sub(ev.Time)
	return d >= time.Hour && d < time.Hour+time.Second && next.Equal(next.Truncate(time.Second))
}

func TestCleaner_CountsEvaluationsDeletionsAndTheScheduleInMetrics(t *testing.T) {
	e := newEnv(t)
	reg := prometheus.NewRegistry()
	e.startWith(nil, cleaner.Options{}, reg)
	e.secret("s", testkit.Labels("preview", "closed"))
	e.secret("o", testkit.Labels("preview", "open"))
	e.createCleaner("acts", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "s", true)}, Conditions: []string{closed}})
	e.createCleaner("waits", api.CleanerSpec{Targets: []api.CleanerTarget{secretTarget("s", "o", false)}, Conditions: []string{closed}})
	e.waitPhase("waits", api.CleanerPending)
	testkit.Eventually(t, wait, "the first cleaner acting", func() bool { return e.gone(api.KindCleaner, "acts") })
	want := map[string]float64{
		`cairn_cleaner_evaluations_total{result="true"}`:  1,
		`cairn_cleaner_evaluations_total{result="false"}`: 1,
		`cairn_cleaner_deletions_total`:                   2, // the secret, then the cleaner
		`cairn_cleaner_scheduled`:                         1,
	}
	testkit.EventuallyNil(t, wait, "the metrics", func() error {
		got, err := gathered(reg)
		if err != nil {
			return err
		}
		for k, v := range want {
			if got[k] < v {
				return fmt.Errorf("%s = %v, want at least %v (all: %v)", k, got[k], v, got)
			}
		}
		return nil
	})
}

// gathered reads reg's counters and gauges as "name{label="v"}" → value.
func gathered(reg *prometheus.Registry) (map[string]float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[name] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out, nil
}
