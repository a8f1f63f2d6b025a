package kinds

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cleaner/condition"
	"cairn.dev/cairn/openapi"
	"cairn.dev/cairn/registry"
)

// Bounds of a Cleaner's spec.
const (
	maxCleanerTargets    = 64
	maxCleanerConditions = 32
	// DefaultCleanerRetryPeriod is a Cleaner's retry.period when unset.
	DefaultCleanerRetryPeriod = time.Hour
	minCleanerRetryPeriod     = time.Second
)

// celIdentifier is what a target's name must look like to be a CEL
// variable.
var celIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// celReserved are CEL's reserved words and literals, which cannot name a
// variable.
var celReserved = []string{"true", "false", "null", "in", "as", "break", "const", "continue", "else",
	"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}

// Cleaner defines the Cleaner kind: admission compiles every condition
// against the variables its targets make, and checks that each target
// names a namespaced kind this server serves (those of All(d)).
func Cleaner(d Deps) registry.Kind {
	var (
		once       sync.Once
		namespaced map[string]bool // served kind → namespaced
	)
	compiler := condition.NewCompiler()
	served := func() map[string]bool {
		once.Do(func() {
			namespaced = map[string]bool{}
			for _, k := range All(d) {
				namespaced[k.Kind] = k.Namespaced
			}
		})
		return namespaced
	}
	var (
		schemasOnce sync.Once
		schemas     *condition.Schemas
		schemasErr  error
	)
	typed := func() (*condition.Schemas, error) {
		schemasOnce.Do(func() { schemas, schemasErr = kindSchemas(All(d)) })
		return schemas, schemasErr
	}
	return registry.Define(registry.Spec[*api.Cleaner]{
		Kind: api.KindCleaner, Namespaced: true, ShortNames: []string{"cln"}, Fields: []string{"spec", "status"},
		Columns: []api.Column{
			{Name: "PHASE", Path: ".status.phase"},
			{Name: "TTL", Path: ".spec.ttl"},
			{Name: "NEXT-EVALUATION", Path: ".status.nextScheduledEvaluation"},
			{Name: "TARGETS", Path: ".spec.targets", Format: "count"},
			{Name: "RESOLVED", Path: ".status.resolvedTargets", Format: "count", Wide: true},
			age,
		},
		Default: defaultCleaner,
		Validate: func(_ context.Context, _ *registry.Admission, c *api.Cleaner) field.ErrorList {
			errs := validateCleaner(c, served(), compiler)
			if len(errs) > 0 {
				return errs
			}
			return typeCheckCleaner(c, typed, compiler)
		},
		Acts: actsOfCleaner,
	})
}

func defaultCleaner(c *api.Cleaner) {
	if c.Spec.Retry.Period.Duration == 0 {
		c.Spec.Retry.Period.Duration = DefaultCleanerRetryPeriod
	}
	for i := range c.Spec.Targets {
		if c.Spec.Targets[i].IncludeWhenEvaluating == nil {
			t := true
			c.Spec.Targets[i].IncludeWhenEvaluating = &t
		}
	}
}

func validateCleaner(c *api.Cleaner, served map[string]bool, compiler *condition.Compiler) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if c.Spec.TTL.Duration < 0 {
		errs = append(errs, field.Invalid(spec.Child("ttl"), c.Spec.TTL.String(), "must not be negative"))
	}
	if p := c.Spec.Retry.Period.Duration; p < minCleanerRetryPeriod {
		errs = append(errs, field.Invalid(spec.Child("retry", "period"), p.String(),
			fmt.Sprintf("must be at least %s", minCleanerRetryPeriod)))
	}
	if len(c.Spec.Targets) > maxCleanerTargets {
		errs = append(errs, field.TooMany(spec.Child("targets"), len(c.Spec.Targets), maxCleanerTargets))
	}
	if len(c.Spec.Conditions) > maxCleanerConditions {
		errs = append(errs, field.TooMany(spec.Child("conditions"), len(c.Spec.Conditions), maxCleanerConditions))
	}
	errs = append(errs, validateCapacity(spec.Child("capacity"), c.Spec.Capacity, served)...)
	var vars []string
	namesOK := true
	seen := map[string]bool{}
	for i, t := range c.Spec.Targets {
		p := spec.Child("targets").Index(i)
		switch {
		case t.Name == condition.VarTime:
			errs = append(errs, field.Invalid(p.Child("name"), t.Name, "is the evaluation's time variable: choose another name"))
			namesOK = false
		case !celIdentifier.MatchString(t.Name):
			errs = append(errs, field.Invalid(p.Child("name"), t.Name,
				"must be a CEL identifier (a letter or _, then letters, digits or _)"))
			namesOK = false
		case slices.Contains(celReserved, t.Name):
			errs = append(errs, field.Invalid(p.Child("name"), t.Name, "is a reserved word of CEL"))
			namesOK = false
		case seen[t.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), t.Name))
			namesOK = false
		}
		seen[t.Name] = true
		if t.Evaluated() {
			vars = append(vars, t.Name)
		}
		errs = append(errs, validateTargetReference(p.Child("reference"), t.Reference, served)...)
	}
	if !namesOK {
		// The conditions cannot be checked against variables that cannot
		// be declared.
		return errs
	}
	_, issues, err := compiler.Compile(vars, c.Spec.Conditions)
	if err != nil {
		return append(errs, field.InternalError(spec.Child("conditions"), err))
	}
	for _, is := range issues {
		msg := is.Message
		if pos := is.Position(); pos != "" {
			msg = pos + ": " + msg
		}
		errs = append(errs, field.Invalid(spec.Child("conditions").Index(is.Index), clipCondition(c.Spec.Conditions[is.Index]), msg))
	}
	return errs
}

// maxCleanerCapacity bounds spec.capacity.max.
const maxCleanerCapacity = 1 << 20

// validateCapacity checks spec.capacity: a max of at least 1, a
// namespaced served kind (not Cleaner), valid labels, and the one order.
func validateCapacity(p *field.Path, cp *api.CleanerCapacity, served map[string]bool) field.ErrorList {
	if cp == nil {
		return nil
	}
	var errs field.ErrorList
	if cp.Max < 1 || cp.Max > maxCleanerCapacity {
		errs = append(errs, field.Invalid(p.Child("max"), cp.Max,
			fmt.Sprintf("must be between 1 and %d: how many matching objects are kept", maxCleanerCapacity)))
	}
	if cp.OrderBy != "" && cp.OrderBy != api.CapacityOrderByCreation {
		errs = append(errs, field.NotSupported(p.Child("orderBy"), cp.OrderBy, []string{api.CapacityOrderByCreation}))
	}
	// The kind is checked as a target's is; the selector may be empty
	// (every object of the kind).
	sel := p.Child("selector")
	errs = append(errs, validateTargetKind(sel.Child("kind"), cp.Selector.Kind, served)...)
	for _, k := range slices.Sorted(maps.Keys(cp.Selector.MatchLabels)) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(sel.Child("matchLabels").Key(k), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(cp.Selector.MatchLabels[k]) {
			errs = append(errs, field.Invalid(sel.Child("matchLabels").Key(k), cp.Selector.MatchLabels[k], msg))
		}
	}
	return errs
}

// kindSchemas are the OpenAPI definitions of ks, which a Cleaner's
// conditions are type-checked against.
func kindSchemas(ks []registry.Kind) (*condition.Schemas, error) {
	rs := make([]openapi.Resource, 0, len(ks))
	for _, k := range ks {
		rs = append(rs, openapi.Resource{Info: k.KindInfo, Type: k.GoType})
	}
	defs, err := openapi.KindDefinitions(rs)
	if err != nil {
		return nil, fmt.Errorf("kinds: the schemas of Cleaner targets: %w", err)
	}
	return &condition.Schemas{Defs: defs, DefName: openapi.DefinitionName}, nil
}

// typeCheckCleaner type-checks c's conditions (which compile) against the
// schemas of its targets' kinds (typed gives them): a 422 names each
// condition that does not, with the operator and the types.
func typeCheckCleaner(c *api.Cleaner, typed func() (*condition.Schemas, error), compiler *condition.Compiler) field.ErrorList {
	if len(c.Spec.Conditions) == 0 {
		return nil
	}
	path := field.NewPath("spec", "conditions")
	s, err := typed()
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	var vars []condition.TypedVar
	for _, t := range c.Spec.Targets {
		if t.Evaluated() {
			vars = append(vars, condition.TypedVar{Name: t.Name, Kind: t.Reference.Kind, Selected: t.Reference.Name == ""})
		}
	}
	issues, err := compiler.TypeCheck(vars, c.Spec.Conditions, s)
	if err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	var errs field.ErrorList
	for _, is := range issues {
		msg := is.Message
		if pos := is.Position(); pos != "" {
			msg = pos + ": " + msg
		}
		errs = append(errs, field.Invalid(path.Index(is.Index), clipCondition(c.Spec.Conditions[is.Index]), msg))
	}
	return errs
}

func validateTargetReference(p *field.Path, r api.TargetReference, served map[string]bool) field.ErrorList {
	errs := validateTargetKind(p.Child("kind"), r.Kind, served)
	switch {
	case r.Name == "" && len(r.MatchLabels) == 0:
		errs = append(errs, field.Required(p, "one of name and matchLabels"))
	case r.Name != "" && len(r.MatchLabels) > 0:
		errs = append(errs, field.Invalid(p, r.Name, "name and matchLabels are exclusive"))
	case r.Name != "":
		for _, msg := range validation.IsDNS1123Subdomain(r.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), r.Name, msg))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(r.MatchLabels)) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p.Child("matchLabels").Key(k), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(r.MatchLabels[k]) {
			errs = append(errs, field.Invalid(p.Child("matchLabels").Key(k), r.MatchLabels[k], msg))
		}
	}
	return errs
}

// validateTargetKind checks that kind is a namespaced kind the server
// serves, not Cleaner.
func validateTargetKind(p *field.Path, kind string, served map[string]bool) field.ErrorList {
	ns, ok := served[kind]
	switch {
	case kind == "":
		return field.ErrorList{field.Required(p, "a kind the server serves")}
	case !ok:
		return field.ErrorList{field.NotSupported(p, kind, namespacedKinds(served))}
	case !ns:
		return field.ErrorList{field.Invalid(p, kind, "is cluster-scoped: a Cleaner's targets are objects of its own namespace")}
	case kind == api.KindCleaner:
		// Every evaluation writes the Cleaner's status: Cleaners watching
		// Cleaners would wake each other for ever.
		return field.ErrorList{field.Invalid(p, kind, "a Cleaner cannot target Cleaners")}
	}
	return nil
}

func namespacedKinds(served map[string]bool) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(served)) {
		if served[k] {
			out = append(out, k)
		}
	}
	return out
}

// clipCondition shortens a condition shown in an error.
func clipCondition(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
