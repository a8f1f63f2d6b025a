package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
)

// Execution defines the Execution kind. Admission checks its deploy items:
// names unique DNS-1123 labels, types set, dependsOn naming items of the
// same execution without a cycle, timeouts positive durations.
func Execution() registry.Kind {
	return registry.Define(registry.Spec[*api.Execution]{
		Kind: api.KindExecution, Namespaced: true, ShortNames: []string{"exec"}, Fields: []string{"spec", "status"},
		Columns:  []api.Column{{Name: "PHASE", Path: ".status.phase"}, {Name: "ITEMS", Path: ".status.ready"}, age},
		Precheck: checkExecutionDurations,
		Validate: func(_ context.Context, _ *registry.Admission, e *api.Execution) field.ErrorList {
			return validateExecution(e)
		},
		Acts: actsOfExecution,
	})
}

// DeployItem defines the DeployItem kind. Admission requires a type and a
// positive timeout when one is given.
func DeployItem() registry.Kind {
	return registry.Define(registry.Spec[*api.DeployItem]{
		Kind: api.KindDeployItem, Namespaced: true, ShortNames: []string{"di"}, Fields: []string{"spec", "status"},
		Columns: []api.Column{{Name: "TYPE", Path: ".spec.type"}, {Name: "PHASE", Path: ".status.phase"},
			{Name: "OBJECTS", Path: ".status.providerStatus.ready"}, age},
		Precheck: func(obj *api.Object) field.ErrorList {
			return checkDuration(obj.Field(api.FieldSpec), "timeout", field.NewPath("spec", "timeout"))
		},
		Validate: func(_ context.Context, _ *registry.Admission, d *api.DeployItem) field.ErrorList {
			spec := field.NewPath("spec")
			errs := requireType(spec.Child("type"), d.Spec.Type)
			errs = append(errs, validateDeployConfig(&d.ObjectMeta, spec.Child("config"), d.Spec.Type, d.Spec.Config)...)
			return append(errs, positive(spec.Child("timeout"), d.Spec.Timeout)...)
		},
		Acts: actsOfDeployItem,
	})
}

var deployItemsPath = field.NewPath("spec", "deployItems")

// validateExecution checks an execution's deploy items.
func validateExecution(e *api.Execution) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, it := range e.Spec.DeployItems {
		p := deployItemsPath.Index(i)
		for _, msg := range validation.IsDNS1123Label(it.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), it.Name, msg))
		}
		if seen[it.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), it.Name))
		}
		seen[it.Name] = true
		errs = append(errs, requireType(p.Child("type"), it.Type)...)
		errs = append(errs, positive(p.Child("timeout"), it.Timeout)...)
		errs = append(errs, validateDeployConfig(&e.ObjectMeta, p.Child("config"), it.Type, it.Config)...)
	}
	for i, it := range e.Spec.DeployItems {
		for j, dep := range it.DependsOn {
			p := deployItemsPath.Index(i).Child("dependsOn").Index(j)
			switch {
			case dep == it.Name:
				errs = append(errs, field.Invalid(p, dep, "a deploy item cannot depend on itself"))
			case !seen[dep]:
				errs = append(errs, field.NotFound(p, dep))
			}
		}
	}
	if cycle := DependencyCycle(e.Spec.DeployItems); len(cycle) > 2 {
		errs = append(errs, field.Invalid(deployItemsPath, strings.Join(cycle, " → "),
			"the dependsOn of these deploy items form a cycle"))
	}
	return errs
}

// DependencyCycle returns a dependsOn cycle among items as the names along
// it, the first repeated at the end ("a", "b", "a"), or nil when there is
// none. Names that no item has, and self-dependencies, are not followed.
// The search is a three-colour depth-first walk in spec order, so the
// cycle reported is deterministic.
func DependencyCycle(items []api.DeployItemTemplate) []string {
	deps := make(map[string][]string, len(items))
	for _, it := range items {
		deps[it.Name] = it.DependsOn
	}
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	var path []string
	var visit func(n string) []string
	visit = func(n string) []string {
		colour[n] = grey
		path = append(path, n)
		for _, d := range deps[n] {
			if _, ok := deps[d]; !ok || d == n {
				continue
			}
			switch colour[d] {
			case grey:
				start := slices.Index(path, d)
				return append(slices.Clone(path[start:]), d)
			case white:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		colour[n] = black
		return nil
	}
	for _, it := range items {
		if colour[it.Name] == white {
			if c := visit(it.Name); c != nil {
				return c
			}
		}
	}
	return nil
}

// validateTarget requires a target's type, and checks the config of the
// types cairn knows.
func validateTarget(_ context.Context, _ *registry.Admission, t *api.Target) field.ErrorList {
	if strings.TrimSpace(t.Spec.Type) == "" {
		return field.ErrorList{field.Required(field.NewPath("spec", "type"), "a target needs a type")}
	}
	return validateTargetConfig(t)
}

func requireType(p *field.Path, t string) field.ErrorList {
	if strings.TrimSpace(t) == "" {
		return field.ErrorList{field.Required(p, "a deploy item needs a type (such as mock or container)")}
	}
	return nil
}

func positive(p *field.Path, d *api.Duration) field.ErrorList {
	if d != nil && d.Duration <= 0 {
		return field.ErrorList{field.Invalid(p, d.String(), "must be a positive duration")}
	}
	return nil
}

// checkExecutionDurations names each deploy item timeout that is not a Go
// duration string, before the typed decode refuses the object without a
// field error.
func checkExecutionDurations(obj *api.Object) field.ErrorList {
	var spec struct {
		DeployItems []map[string]json.RawMessage `json:"deployItems"`
	}
	if json.Unmarshal(obj.Field(api.FieldSpec), &spec) != nil {
		return nil
	}
	var errs field.ErrorList
	for i, it := range spec.DeployItems {
		raw, _ := json.Marshal(it)
		errs = append(errs, checkDuration(raw, "timeout", deployItemsPath.Index(i).Child("timeout"))...)
	}
	return errs
}

// checkDuration checks that raw's member key, when present, is a duration
// string.
func checkDuration(raw json.RawMessage, key string, p *field.Path) field.ErrorList {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	v, ok := m[key]
	if !ok || isNull(v) {
		return nil
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return field.ErrorList{field.Invalid(p, string(v), `must be a duration string such as "90s" or "5m"`)}
	}
	if _, err := time.ParseDuration(s); err != nil {
		return field.ErrorList{field.Invalid(p, s, fmt.Sprintf(`must be a duration such as "90s" or "5m" (%v)`, err))}
	}
	return nil
}
