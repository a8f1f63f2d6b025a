package explain

import (
	"strings"

	"cairn.dev/cairn/api"
)

// The steps of the installation controller's trace are numbered as in the
// seed's reconciliation flow (docs/deployments.md): "4.1 PendingDependencies:
// ...". Explain names each numbered step in words too, from the flow the
// reconcile is in: the core flow until a sub-flow step enters the
// deletion, force or standard flow.

// flow is one of the installation's reconciliation flows.
type flow string

const (
	flowCore     flow = "core"
	flowStandard flow = "standard"
	flowForce    flow = "force"
	flowDeletion flow = "deletion"
)

// seedSteps names the numbered steps of each flow, as the seed words them.
var seedSteps = map[flow]map[string]string{
	flowCore: {
		"1": "check for ignore annotation", "2": "add finalizer", "3": "check for deletion",
		"4": "check for operation annotation", "5": "check for changes in nested installations",
		"6": "standard reconcile",
	},
	flowStandard: {
		"1": "compute combined phase", "2": "evaluate combined phase", "3": "check for abort operation annotation",
		"4": "check if an update is required", "4.1": "check if updating is possible",
		"5": "export generation", "6": "trigger depending installations",
	},
	flowForce: {
		"1": "check if imports are satisfied", "2": "update nested installations and executions",
		"3": "remove operation annotation", "4": "set phase",
	},
	flowDeletion: {
		"1": "check for force-reconcile operation annotation", "1.1": "update nested installations and executions",
		"1.2": "delete nested installations and executions", "1.3": "remove operation annotation",
		"2": "check for sibling imports", "3": "compute combined phase", "4": "shortcut deletion for empty installations",
		"5": "evaluate combined phase", "6": "check if an update is required", "7": "delete nested installations and executions",
	},
}

// seedControllers are the controllers whose steps are numbered after the
// seed's installation flows.
var seedControllers = map[string]bool{"installation": true}

// nameSeedSteps returns the messages of a reconcile's steps with each
// numbered step of a seed flow named in words after its number:
// "4.1 [check if updating is possible] PendingDependencies: ...". Steps of
// other controllers, and unnumbered ones, are unchanged. It is pure.
func nameSeedSteps(controller string, steps []api.TraceStep) []string {
	out := make([]string, len(steps))
	cur := flowCore
	for i, s := range steps {
		out[i] = s.Message
		if !seedControllers[controller] {
			continue
		}
		num, rest, ok := stepNumber(s.Message)
		if ok {
			words := seedSteps[cur][num]
			if words == "" && cur == flowForce {
				words = seedSteps[flowStandard][num] // exports and triggers are shared
			}
			if words != "" {
				out[i] = num + " [" + words + "] " + rest
			}
		}
		if s.Type == api.StepSubflow {
			cur = enteredFlow(s.Message, cur)
		}
	}
	return out
}

// stepNumber splits "4.1 rest" or "5. rest" into "4.1" or "5" and rest; a
// bare number ("3 subinstallations") is no step.
func stepNumber(msg string) (num, rest string, ok bool) {
	head, rest, found := strings.Cut(msg, " ")
	dotted := strings.HasSuffix(head, ".") || strings.Contains(head, ".")
	head = strings.TrimSuffix(head, ".")
	if !found || head == "" || !dotted {
		return "", msg, false
	}
	for _, r := range head {
		if (r < '0' || r > '9') && r != '.' {
			return "", msg, false
		}
	}
	if head[0] == '.' {
		return "", msg, false
	}
	return head, rest, true
}

// enteredFlow is the flow a sub-flow step of the core flow enters.
func enteredFlow(msg string, cur flow) flow {
	switch {
	case strings.Contains(msg, "deletion flow"):
		return flowDeletion
	case strings.Contains(msg, "force reconcile"):
		return flowForce
	case strings.Contains(msg, "standard reconcile"):
		return flowStandard
	}
	return cur
}
