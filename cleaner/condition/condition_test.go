package condition

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCompile_RejectsBadConditionsNamingIndexAndPosition(t *testing.T) {
	cases := []struct {
		name, cond, want string
		line, col        int
	}{
		{"syntax error", `inst.metadata.name ==`, "Syntax error", 1, 22},
		{"unknown variable", `true && preview.x == 1`, "undeclared reference to 'preview'", 1, 9},
		{"type error", `time + 1 == time`, "no matching overload", 1, 6},
		{"non-boolean", `"closed"`, "must give a bool, not string", 1, 1},
		{"non-boolean int", `1 + 2`, "must give a bool, not int", 1, 1},
		{"unknown function", `inst.frobnicate()`, "undeclared reference to 'frobnicate'", 1, 16},
		{"empty", `  `, "must not be empty", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, issues, err := Compile([]string{"inst"}, []string{`true`, c.cond})
			if err != nil {
				t.Fatal(err)
			}
			if len(issues) == 0 {
				t.Fatalf("%q compiled", c.cond)
			}
			is := issues[0]
			if is.Index != 1 || !strings.Contains(is.Message, c.want) || is.Line != c.line || is.Column != c.col {
				t.Fatalf("issue = %+v (%s); want index 1, %q at %d:%d", is, is.Error(), c.want, c.line, c.col)
			}
		})
	}
}

func TestCompile_AcceptsBooleanAndDynConditionsWithExtensions(t *testing.T) {
	conds := []string{
		`inst.metadata.labels["preview"] == "closed"`,
		`inst.metadata.name.split("-").exists(p, p.startsWith("pr"))`,
		`time - timestamp(inst.metadata.creationTimestamp) > duration("1h")`,
		`revs.items.all(r, r.metadata.name.lowerAscii() != "")`,
		`inst.spec.ready`,
		`math.greatest(1, 2) == 2 && sets.contains([1, 2], [1])`,
	}
	set, issues, err := Compile([]string{"inst", "revs"}, conds)
	if err != nil || len(issues) > 0 {
		t.Fatalf("issues %v, err %v", issues, err)
	}
	if len(set.Programs) != len(conds) {
		t.Fatalf("%d programs", len(set.Programs))
	}
}

func obj(labels map[string]any) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": "pr-1", "labels": labels,
		"creationTimestamp": "2026-01-01T00:00:00Z"}}
}

func TestEval_GivesValuesAndClassifiesFailures(t *testing.T) {
	set, issues, err := Compile([]string{"inst"}, []string{
		`inst.metadata.labels["preview"] == "closed"`,
		`inst.metadata.labels.missing == "x"`,
		`inst.metadata.name`,
		`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a+b+c+d+e+f > 0))))))`,
	})
	if err != nil || issues != nil {
		t.Fatal(issues, err)
	}
	rs := set.Eval(context.Background(), map[string]any{"inst": obj(map[string]any{"preview": "closed"})}, time.Now())
	if !rs[0].Value || rs[0].Err != nil {
		t.Errorf("condition 0 = %+v, want true", rs[0])
	}
	if !errors.Is(rs[1].Err, ErrEvaluation) {
		t.Errorf("condition 1 = %+v, want an evaluation error", rs[1])
	}
	if !errors.Is(rs[2].Err, ErrNonBoolean) {
		t.Errorf("condition 2 = %+v, want a non-boolean result", rs[2])
	}
	if !errors.Is(rs[3].Err, ErrCostLimit) && !errors.Is(rs[3].Err, ErrTimeout) {
		t.Errorf("condition 3 = %+v, want the cost limit", rs[3])
	}
	if AllTrue(rs) {
		t.Error("AllTrue with failures")
	}
	if i, err := FirstError(rs); i != 1 || err == nil {
		t.Errorf("FirstError = %d, %v", i, err)
	}
}

func TestEval_MissingTargetIsNull(t *testing.T) {
	set, _, _ := Compile([]string{"inst"}, []string{`inst == null`})
	if rs := set.Eval(context.Background(), nil, time.Now()); !AllTrue(rs) {
		t.Fatalf("results %+v", rs)
	}
}

func TestEarliestTrue_FindsTheTimeOfMonotonicConditionsAndNothingElse(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := from.Add(36*time.Hour + 17*time.Minute + 3*time.Second)
	cases := []struct {
		name  string
		cond  string
		found bool
		why   error // when not found
	}{
		{"time after a timestamp", `time > timestamp("` + at.Format(time.RFC3339) + `")`, true, nil},
		{"age of a target", `time - timestamp(inst.metadata.creationTimestamp) >= duration("` +
			at.Sub(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).String() + `")`, true, nil},
		{"never within the horizon", `time > timestamp("2030-01-01T00:00:00Z")`, false, ErrBeyondHorizon},
		{"not about time", `inst.metadata.labels["preview"] == "closed"`, false, ErrSearchEval},
		{"not about time, holding never", `has(inst.metadata.labels) && false`, false, ErrBeyondHorizon},
		{"failing", `inst.metadata.labels.missing`, false, ErrSearchEval},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, issues, err := Compile([]string{"inst"}, []string{c.cond})
			if err != nil || issues != nil {
				t.Fatal(issues, err)
			}
			got, err := set.EarliestTrue(context.Background(), map[string]any{"inst": obj(map[string]any{})}, from)
			ok := err == nil
			if ok != c.found || (!ok && !errors.Is(err, c.why)) {
				t.Fatalf("found = %v (%s, %v), want %v (%v)", ok, got, err, c.found, c.why)
			}
			if ok && (got.Before(at) || got.Sub(at) > 2*Precision) {
				t.Fatalf("found %s, want within %s after %s", got, Precision, at)
			}
		})
	}
}
