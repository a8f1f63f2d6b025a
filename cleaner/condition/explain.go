package condition

import (
	"context"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
)

// noOverload is how cel-go says that an operator or function met
// arguments of types it does not take.
const noOverload = "no such overload"

// overloadDetail names the call of p that found no overload when p is
// evaluated over act: "no such overload for '_+_' applied to '(string,
// int)' at line 1, column 15", as the type checker says it. It evaluates p
// once more, tracking every value (only after a failure: the usual
// evaluation tracks nothing), within Timeout and CostLimit. It returns ""
// when it cannot tell.
func (p Program) overloadDetail(ctx context.Context, act map[string]any) string {
	if p.env == nil || p.ast == nil {
		return ""
	}
	prg, err := p.env.Program(p.ast, cel.EvalOptions(cel.OptTrackState), cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	_, det, _ := prg.ContextEval(ctx, act)
	if det == nil || det.State() == nil {
		return ""
	}
	state := det.State()
	native := p.ast.NativeRep()
	var found string
	celast.PostOrderVisit(native.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if found != "" || e.Kind() != celast.CallKind {
			return
		}
		v, ok := state.Value(e.ID())
		if !ok || !types.IsError(v) || !strings.Contains(fmt.Sprint(v), noOverload) {
			return
		}
		call := e.AsCall()
		args := call.Args()
		if call.IsMemberFunction() {
			args = append([]celast.Expr{call.Target()}, args...)
		}
		names := make([]string, 0, len(args))
		for _, a := range args {
			av, ok := state.Value(a.ID())
			if !ok || types.IsError(av) {
				return // the failure is an argument's, found before
			}
			names = append(names, av.Type().TypeName())
		}
		found = fmt.Sprintf("%s for '%s' applied to '(%s)'", noOverload, call.FunctionName(), strings.Join(names, ", "))
		if loc := native.SourceInfo().GetStartLocation(e.ID()); loc.Line() > 0 {
			found += fmt.Sprintf(" at line %d, column %d", loc.Line(), loc.Column()+1)
		}
	}))
	return found
}
