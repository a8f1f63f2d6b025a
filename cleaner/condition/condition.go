// Package condition compiles and evaluates a Cleaner's CEL conditions: the
// environment they are checked against (`time`, a timestamp, and one `dyn`
// variable per evaluated target), the bounds that keep one evaluation
// cheap (a cost limit, a deadline), and the search for the earliest time a
// set of conditions monotonic in `time` holds. It is plain logic: no API,
// no store, usable by admission (package kinds) and by the controller
// (package cleaner) alike.
package condition

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
)

// VarTime is the variable holding the evaluation's time.
const VarTime = "time"

// Bounds of one evaluation.
const (
	// CostLimit is the most CEL cost units one condition may spend in one
	// evaluation (a unit is roughly one operation; a comprehension costs
	// per element). Past it the condition fails with ErrCostLimit.
	CostLimit = 1_000_000
	// Timeout bounds the wall time of one condition's evaluation,
	// whatever its cost estimate said; past it the condition fails with
	// ErrTimeout. Comprehensions check it every 100 iterations.
	Timeout = 100 * time.Millisecond
	// MaxConditionBytes bounds the text of one condition.
	MaxConditionBytes = 16 << 10
)

// Errors of an evaluation, each wrapped with the condition's index.
var (
	// ErrCostLimit: the condition spent more than CostLimit.
	ErrCostLimit = errors.New("condition: cost limit exceeded")
	// ErrTimeout: the condition ran longer than Timeout.
	ErrTimeout = errors.New("condition: evaluation timed out")
	// ErrNonBoolean: the condition's value is not a boolean.
	ErrNonBoolean = errors.New("condition: result is not a boolean")
	// ErrEvaluation: the condition failed (no such key, a bad
	// conversion, a division by zero, a panic of the evaluator).
	ErrEvaluation = errors.New("condition: evaluation failed")
)

// Issue is one compile error of one condition: where it is and why.
type Issue struct {
	// Index is the condition's position in the list compiled.
	Index int
	// Line and Column locate the problem in the condition (1-based; 0 when
	// the problem is the whole condition).
	Line, Column int
	Message      string
}

// Position renders where the issue is: "line 1, column 7", or "" when it
// concerns the whole condition.
func (i Issue) Position() string {
	if i.Line <= 0 {
		return ""
	}
	return fmt.Sprintf("line %d, column %d", i.Line, i.Column)
}

func (i Issue) Error() string {
	if p := i.Position(); p != "" {
		return fmt.Sprintf("condition %d, %s: %s", i.Index, p, i.Message)
	}
	return fmt.Sprintf("condition %d: %s", i.Index, i.Message)
}

// NewEnv returns the environment conditions are compiled in: `time` (a
// timestamp) and one `dyn` variable per name in vars, with the string,
// encoder, math, list, set, regex and two-variable comprehension
// extensions, optional types and numeric comparisons across int, uint and
// double. The caller checks vars (CEL identifiers, not "time", unique).
func NewEnv(vars []string) (*cel.Env, error) {
	opts := []cel.EnvOption{
		cel.Variable(VarTime, cel.TimestampType), cel.OptionalTypes(),
		ext.Strings(), ext.Encoders(), ext.Math(), ext.Lists(), ext.Sets(), ext.Regex(),
		ext.TwoVarComprehensions(), cel.CrossTypeNumericComparisons(true),
	}
	for _, v := range vars {
		opts = append(opts, cel.Variable(v, cel.DynType))
	}
	return cel.NewEnv(opts...)
}

// Program is one compiled condition.
type Program struct {
	// Source is the condition's text.
	Source string
	prg    cel.Program
	// env and ast make a program that tracks values, to explain a
	// failure (explain.go).
	env *cel.Env
	ast *cel.Ast
}

// Set is the compiled conditions of one Cleaner (of one generation). It is
// immutable and safe for concurrent use.
type Set struct {
	// Vars are the variables the conditions may use besides `time`.
	Vars     []string
	Programs []Program
}

// Compile checks and plans every condition against the environment of
// vars. It returns the set, or every issue found (each naming its
// condition and where in it): syntax errors, unknown variables or
// functions, type errors, and results that cannot be booleans (a `dyn`
// result is accepted and checked at evaluation). An error is returned only
// when the environment itself cannot be built (bad variable names).
func Compile(vars []string, conditions []string) (*Set, []Issue, error) {
	env, err := NewEnv(vars)
	if err != nil {
		return nil, nil, fmt.Errorf("condition: environment: %w", err)
	}
	set := &Set{Vars: vars}
	var issues []Issue
	for i, src := range conditions {
		if strings.TrimSpace(src) == "" {
			issues = append(issues, Issue{Index: i, Message: "must not be empty"})
			continue
		}
		if len(src) > MaxConditionBytes {
			issues = append(issues, Issue{Index: i, Message: fmt.Sprintf("must be at most %d bytes", MaxConditionBytes)})
			continue
		}
		ast, iss := env.Compile(src)
		if iss.Err() != nil {
			for _, e := range iss.Errors() {
				issues = append(issues, Issue{Index: i, Line: e.Location.Line(), Column: e.Location.Column() + 1,
					Message: e.Message})
			}
			continue
		}
		if out := ast.OutputType(); !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
			issues = append(issues, Issue{Index: i, Line: 1, Column: 1,
				Message: fmt.Sprintf("must give a bool, not %s", out)})
			continue
		}
		prg, err := env.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
		if err != nil {
			issues = append(issues, Issue{Index: i, Message: err.Error()})
			continue
		}
		set.Programs = append(set.Programs, Program{Source: src, prg: prg, env: env, ast: ast})
	}
	if len(issues) > 0 {
		return nil, issues, nil
	}
	return set, nil, nil
}

// Result is the outcome of one condition.
type Result struct {
	// Value is the condition's value when Err is nil.
	Value bool
	// Err wraps one of ErrCostLimit, ErrTimeout, ErrNonBoolean and
	// ErrEvaluation.
	Err error
}

// Eval evaluates every condition at time at over vars (one entry per
// name of s.Vars; a missing one is null). It never panics and never runs a
// condition past Timeout or CostLimit; ctx ends it sooner (the remaining
// conditions then fail with ErrTimeout).
func (s *Set) Eval(ctx context.Context, vars map[string]any, at time.Time) []Result {
	act := activation(s.Vars, vars, at)
	out := make([]Result, len(s.Programs))
	for i, p := range s.Programs {
		out[i] = p.eval(ctx, act)
	}
	return out
}

// AllTrue reports whether every result is a true value without error
// (an empty set holds: a Cleaner with no conditions acts at its TTL).
func AllTrue(rs []Result) bool {
	for _, r := range rs {
		if r.Err != nil || !r.Value {
			return false
		}
	}
	return true
}

// FirstError returns the first failed result's error, with the index of
// its condition, or nil.
func FirstError(rs []Result) (int, error) {
	for i, r := range rs {
		if r.Err != nil {
			return i, r.Err
		}
	}
	return -1, nil
}

func activation(names []string, vars map[string]any, at time.Time) map[string]any {
	act := make(map[string]any, len(names)+1)
	for _, n := range names {
		v, ok := vars[n]
		if !ok || v == nil {
			act[n] = types.NullValue
			continue
		}
		act[n] = v
	}
	act[VarTime] = at
	return act
}

func (p Program) eval(ctx context.Context, act map[string]any) (r Result) {
	defer func() {
		if x := recover(); x != nil {
			r = Result{Err: fmt.Errorf("%w: panic: %v", ErrEvaluation, x)}
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	val, _, err := p.prg.ContextEval(ctx, act)
	if err != nil {
		err = classify(ctx, err)
		if errors.Is(err, ErrEvaluation) && strings.Contains(err.Error(), noOverload) {
			if d := p.overloadDetail(ctx, act); d != "" {
				err = fmt.Errorf("%w: %s", ErrEvaluation, d)
			}
		}
		return Result{Err: err}
	}
	return boolOf(val)
}

func boolOf(val ref.Val) Result {
	if b, ok := val.(types.Bool); ok {
		return Result{Value: bool(b)}
	}
	return Result{Err: fmt.Errorf("%w: got %s", ErrNonBoolean, val.Type().TypeName())}
}

// classify names an evaluation failure: cost, time, or anything else.
func classify(ctx context.Context, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "cost limit exceeded"):
		return fmt.Errorf("%w (limit %d)", ErrCostLimit, CostLimit)
	case ctx.Err() != nil || strings.Contains(msg, "interrupted"):
		return fmt.Errorf("%w (after %s)", ErrTimeout, Timeout)
	default:
		return fmt.Errorf("%w: %s", ErrEvaluation, msg)
	}
}
