package explain

import (
	"slices"
	"strings"
	"testing"
	"time"

	"cairn.dev/cairn/api"
)

func TestSelection_ControllerLastAndSilentReconciles(t *testing.T) {
	step := []api.TraceStep{{Type: api.StepCheck, Message: "x"}}
	recs := []api.TraceReconcile{
		{Controller: "gc", Result: "a", Steps: step},
		{Controller: "cleaner", Result: "b"}, // recorded nothing
		{Controller: "cleaner", Result: "c", Steps: step},
		{Controller: "cleaner", Result: "d", Error: "boom"}, // an error is shown
		{Controller: "gc", Result: "e", Steps: step},
	}
	cases := []struct {
		name  string
		sel   selection
		want  string
		empty int
	}{
		{name: "people see what recorded something", sel: selection{}, want: "acde", empty: 1},
		{name: "machines see everything", sel: selection{keepEmpty: true}, want: "abcde"},
		{name: "one controller", sel: selection{controller: "cleaner"}, want: "cd", empty: 1},
		{name: "the last two", sel: selection{last: 2}, want: "de", empty: 1},
		{name: "the last of one controller", sel: selection{controller: "gc", last: 1}, want: "e"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kept, empty := c.sel.apply(recs)
			var got string
			for _, r := range kept {
				got += r.Result
			}
			if got != c.want || empty != c.empty {
				t.Errorf("= %q, %d silent; want %q, %d", got, empty, c.want, c.empty)
			}
		})
	}
}

func TestNameSeedSteps_NamesEachNumberedStepOfItsFlow(t *testing.T) {
	sub := func(m string) api.TraceStep { return api.TraceStep{Type: api.StepSubflow, Message: m} }
	exit := func(m string) api.TraceStep { return api.TraceStep{Type: api.StepExit, Message: m} }
	cases := []struct {
		name       string
		controller string
		steps      []api.TraceStep
		want       []string
	}{
		{name: "core flow", controller: "installation",
			steps: []api.TraceStep{exit("2. added finalizer cairn.dev/installation; the change reconciles again")},
			want:  []string{"2 [add finalizer] added finalizer cairn.dev/installation; the change reconciles again"}},
		{name: "standard flow after its sub-flow step", controller: "installation",
			steps: []api.TraceStep{sub("6. standard reconcile (phase Progressing, generation 2, observed 1)"), exit("4.1 PendingDependencies: import db waits")},
			want: []string{"6 [standard reconcile] standard reconcile (phase Progressing, generation 2, observed 1)",
				"4.1 [check if updating is possible] PendingDependencies: import db waits"}},
		{name: "force flow", controller: "installation",
			steps: []api.TraceStep{sub("4. operation force-reconcile: force reconcile"), exit("1. PendingDependencies: import db waits"), exit("5. no exports to publish")},
			want: []string{"4 [check for operation annotation] operation force-reconcile: force reconcile",
				"1 [check if imports are satisfied] PendingDependencies: import db waits", "5 [export generation] no exports to publish"}},
		{name: "deletion flow", controller: "installation",
			steps: []api.TraceStep{sub("3. deletion timestamp set: deletion flow"), exit("1.2 deleting the nested objects"), exit("7. deleting the nested objects; waiting for them to go")},
			want: []string{"3 [check for deletion] deletion timestamp set: deletion flow",
				"1.2 [delete nested installations and executions] deleting the nested objects",
				"7 [delete nested installations and executions] deleting the nested objects; waiting for them to go"}},
		{name: "unnumbered steps and other controllers are unchanged", controller: "gc",
			steps: []api.TraceStep{exit("2. something"), exit("deleting: 1 object left")},
			want:  []string{"2. something", "deleting: 1 object left"}},
		{name: "a number that is no step", controller: "installation",
			steps: []api.TraceStep{exit("3 subinstallations"), exit("9. not in the seed")},
			want:  []string{"3 subinstallations", "9. not in the seed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := nameSeedSteps(c.controller, c.steps); !slices.Equal(got, c.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestWriteReconcile_StepsNameTheSeedStep(t *testing.T) {
	var b strings.Builder
	start := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	writeReconcile(&b, api.ObjectReference{Kind: "Installation", Namespace: "shop", Name: "shop-app"}, api.TraceReconcile{
		Controller: "installation", Key: "shop/shop-app", Start: start, End: start.Add(3 * time.Millisecond), Result: "done",
		Steps: []api.TraceStep{
			{Type: api.StepSubflow, Message: "6. standard reconcile (phase Progressing, generation 1, observed 0)"},
			{Type: api.StepExit, Message: "4.1 PendingDependencies: import db waits for sibling shop-database (Progressing)"},
		}}, start.Add(time.Minute))
	if !strings.Contains(b.String(), "🚪 4.1 [check if updating is possible] PendingDependencies") {
		t.Errorf("got:\n%s", b.String())
	}
}
