package kinds

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/blueprint"
	"cairn.dev/cairn/registry"
)

// The deployment kinds that describe what to deploy: Target, DataObject,
// Blueprint and Installation (execution.go has the others).

// age is the AGE column every kind ends with.
var age = api.Column{Name: "AGE", Path: ".metadata.creationTimestamp", Format: "age"}

// Target defines the Target kind: where deploy items deploy to. Its
// status says whether a kubernetes-cluster target is reachable (package
// target); admission checks the config of that type.
func Target() registry.Kind {
	return registry.Define(registry.Spec[*api.Target]{
		Kind: api.KindTarget, Namespaced: true, Fields: []string{"spec", "status"},
		Columns: []api.Column{
			{Name: "TYPE", Path: ".spec.type"},
			{Name: "REACHABLE", Path: ".status.conditions." + api.ConditionReachable + ".status"},
			{Name: "VERSION", Path: ".status.serverVersion"},
			age,
		},
		Validate: validateTarget, Acts: actsOfTarget,
	})
}

// DataObject defines the DataObject kind: data in an installation context.
func DataObject() registry.Kind {
	return registry.Define(registry.Spec[*api.DataObject]{
		Kind: api.KindDataObject, Namespaced: true, ShortNames: []string{"do"}, Fields: []string{"data"},
		Columns: []api.Column{age},
		Validate: func(_ context.Context, _ *registry.Admission, d *api.DataObject) field.ErrorList {
			if len(d.Data) > 0 && !json.Valid(d.Data) {
				return field.ErrorList{field.Invalid(field.NewPath("data"), "", "must be a JSON value")}
			}
			return nil
		},
	})
}

// Blueprint defines the Blueprint kind: a reusable deployment description.
// Admission parses every template, compiles every import and export
// schema and checks that names are unique.
func Blueprint() registry.Kind {
	return registry.Define(registry.Spec[*api.Blueprint]{
		Kind: api.KindBlueprint, Namespaced: true, ShortNames: []string{"bp"}, Fields: []string{"spec"},
		Columns: []api.Column{age},
		Validate: func(_ context.Context, _ *registry.Admission, b *api.Blueprint) field.ErrorList {
			return validateBlueprint(&b.Spec, field.NewPath("spec"))
		},
	})
}

// Installation defines the Installation kind. Admission checks the
// blueprint reference (an inline blueprint like a Blueprint), the imports
// (each bound to exactly one source), the exports and automaticReconcile.
func Installation() registry.Kind {
	return registry.Define(registry.Spec[*api.Installation]{
		Kind: api.KindInstallation, Namespaced: true, ShortNames: []string{"inst"}, Fields: []string{"spec", "status"},
		Columns: []api.Column{
			{Name: "PHASE", Path: ".status.phase"},
			{Name: "EXECUTION", Path: ".status.executionRef"},
			{Name: "SUBINSTALLATIONS", Path: ".status.subinstallations", Format: "count"},
			{Name: "ERROR", Path: ".status.lastError.reason"},
			age,
		},
		Validate: func(_ context.Context, _ *registry.Admission, in *api.Installation) field.ErrorList {
			return validateInstallation(&in.Spec, field.NewPath("spec"))
		},
		Acts: actsOfInstallation,
	})
}

func validateInstallation(s *api.InstallationSpec, p *field.Path) field.ErrorList {
	errs := validateBlueprintRef(&s.Blueprint, p.Child("blueprint"))
	errs = append(errs, validateImports(&s.Imports, p.Child("imports"))...)
	errs = append(errs, validateExports(&s.Exports, p.Child("exports"))...)
	if ar := s.AutomaticReconcile; ar != nil {
		ap := p.Child("automaticReconcile")
		if f := ar.FailedReconcile; f != nil {
			if f.MaxRetries < 0 {
				errs = append(errs, field.Invalid(ap.Child("failedReconcile", "maxRetries"), f.MaxRetries, "must not be negative"))
			}
			if f.Interval != nil && f.Interval.Duration <= 0 {
				errs = append(errs, field.Invalid(ap.Child("failedReconcile", "interval"), f.Interval.String(), "must be positive"))
			}
		}
		if sr := ar.SucceededReconcile; sr != nil && sr.Interval != nil && sr.Interval.Duration <= 0 {
			errs = append(errs, field.Invalid(ap.Child("succeededReconcile", "interval"), sr.Interval.String(), "must be positive"))
		}
	}
	return errs
}

func validateBlueprintRef(b *api.BlueprintReference, p *field.Path) field.ErrorList {
	switch {
	case b.Inline == nil && b.Ref == "":
		return field.ErrorList{field.Required(p, "one of inline or ref")}
	case b.Inline != nil && b.Ref != "":
		return field.ErrorList{field.Invalid(p, b.Ref, "set only one of inline or ref")}
	case b.Inline != nil:
		return validateBlueprint(b.Inline, p.Child("inline"))
	}
	return dnsLabel(p.Child("ref"), b.Ref)
}

func dnsLabel(p *field.Path, v string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// unique reports a Duplicate for each name seen before and a Required for
// each empty one.
type unique struct {
	seen map[string]bool
}

func (u *unique) check(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	if u.seen[name] {
		return field.ErrorList{field.Duplicate(p, name)}
	}
	u.seen[name] = true
	return nil
}

func validateBlueprint(s *api.BlueprintSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	params := func(defs []api.ParameterDefinition, p *field.Path) {
		var names unique
		for i, d := range defs {
			ip := p.Index(i)
			errs = append(errs, names.check(ip.Child("name"), d.Name)...)
			switch d.Type {
			case "", api.ParameterData:
			case api.ParameterTarget:
				if len(d.Schema) > 0 {
					errs = append(errs, field.Invalid(ip.Child("schema"), "", "a target import has no schema"))
				}
			default:
				errs = append(errs, field.NotSupported(ip.Child("type"), d.Type, []string{api.ParameterData, api.ParameterTarget}))
			}
			if len(d.Schema) > 0 {
				if _, err := blueprint.CompileSchema(d.Schema); err != nil {
					errs = append(errs, field.Invalid(ip.Child("schema"), "", fmt.Sprintf("%s %q: %v", p.String(), d.Name, err)))
				}
			}
		}
	}
	params(s.Imports, p.Child("imports"))
	params(s.Exports, p.Child("exports"))
	execs := func(list []api.TemplateExecutor, p *field.Path) {
		var names unique
		for i, e := range list {
			ip := p.Index(i)
			errs = append(errs, names.check(ip.Child("name"), e.Name)...)
			if _, err := blueprint.Parse(e); err != nil {
				errs = append(errs, field.Invalid(ip.Child("template"), e.Name, err.Error()))
			}
		}
	}
	execs(s.DeployExecutions, p.Child("deployExecutions"))
	execs(s.ExportExecutions, p.Child("exportExecutions"))
	var subs unique
	for i, sub := range s.Subinstallations {
		ip := p.Child("subinstallations").Index(i)
		if e := subs.check(ip.Child("name"), sub.Name); e != nil {
			errs = append(errs, e...)
		} else {
			errs = append(errs, dnsLabel(ip.Child("name"), sub.Name)...)
		}
		errs = append(errs, validateBlueprintRef(&sub.Blueprint, ip.Child("blueprint"))...)
		errs = append(errs, validateImports(&sub.Imports, ip.Child("imports"))...)
		errs = append(errs, validateExports(&sub.Exports, ip.Child("exports"))...)
	}
	return errs
}

func validateImports(im *api.InstallationImports, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var names unique
	for i, d := range im.Data {
		ip := p.Child("data").Index(i)
		errs = append(errs, names.check(ip.Child("name"), d.Name)...)
		set := 0
		if d.DataRef != "" {
			set++
			errs = append(errs, dnsLabel(ip.Child("dataRef"), d.DataRef)...)
		}
		if d.SecretRef != nil {
			set++
			if d.SecretRef.Name == "" {
				errs = append(errs, field.Required(ip.Child("secretRef", "name"), ""))
			}
		}
		if len(d.Value) > 0 {
			set++
		}
		if set != 1 {
			errs = append(errs, field.Invalid(ip, d.Name, fmt.Sprintf("set exactly one of dataRef, secretRef or value (%d set)", set)))
		}
	}
	for i, t := range im.Targets {
		ip := p.Child("targets").Index(i)
		errs = append(errs, names.check(ip.Child("name"), t.Name)...)
		if t.Target == "" {
			errs = append(errs, field.Required(ip.Child("target"), ""))
		} else {
			errs = append(errs, dnsLabel(ip.Child("target"), t.Target)...)
		}
	}
	return errs
}

func validateExports(ex *api.InstallationExports, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var names, refs unique
	for i, d := range ex.Data {
		ip := p.Child("data").Index(i)
		errs = append(errs, names.check(ip.Child("name"), d.Name)...)
		if e := refs.check(ip.Child("dataRef"), d.DataRef); e != nil {
			errs = append(errs, e...)
		} else {
			errs = append(errs, dnsLabel(ip.Child("dataRef"), d.DataRef)...)
		}
	}
	var targets unique
	for i, t := range ex.Targets {
		ip := p.Child("targets").Index(i)
		errs = append(errs, names.check(ip.Child("name"), t.Name)...)
		if e := targets.check(ip.Child("target"), t.Target); e != nil {
			errs = append(errs, e...)
		} else {
			errs = append(errs, dnsLabel(ip.Child("target"), t.Target)...)
		}
	}
	return errs
}
