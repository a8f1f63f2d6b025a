package wait

import (
	"fmt"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/cli/printer"
)

// Condition is what a wait waits for. Build one with ParseFor, Phase,
// JSONPath or Deleted.
type Condition struct {
	// Description says what is awaited, after "waiting for kind/name to":
	// "have phase=Succeeded", "be deleted".
	Description string
	// met reports whether obj (nil when the object does not exist) fulfils
	// the condition.
	met func(obj *api.Object) bool
	// describe says what was seen of obj, for timeout messages, never
	// showing the values of the kind's sensitive fields.
	describe func(obj *api.Object, sensitive []string) string
	// deletion conditions are also met when the object is replaced by
	// another with the same name (a different uid).
	deletion bool
}

// ParseFor reads the value of --for: "delete", "phase=X",
// "jsonpath=.status.x=Y" (also "jsonpath={.status.x}=Y"). Anything else is
// an error saying what is accepted.
func ParseFor(s string) (Condition, error) {
	switch {
	case s == "delete" || s == "deleted" || s == "deletion":
		return Deleted(), nil
	case strings.HasPrefix(s, "phase="):
		p := strings.TrimPrefix(s, "phase=")
		if p == "" {
			return Condition{}, fmt.Errorf("--for phase= needs a phase, e.g. --for phase=Succeeded")
		}
		return Phase(p), nil
	case strings.HasPrefix(s, "jsonpath="):
		expr := strings.TrimPrefix(s, "jsonpath=")
		var path, value string
		if strings.HasPrefix(expr, "{") {
			end := strings.Index(expr, "}")
			if end < 0 || !strings.HasPrefix(expr[end+1:], "=") {
				return Condition{}, fmt.Errorf("--for %s: expected jsonpath={.path}=value", s)
			}
			path, value = expr[1:end], expr[end+2:]
		} else {
			i := strings.Index(expr, "=")
			if i < 0 {
				return Condition{}, fmt.Errorf("--for %s: expected jsonpath=.path=value", s)
			}
			path, value = expr[:i], expr[i+1:]
		}
		if strings.Trim(path, ".") == "" {
			return Condition{}, fmt.Errorf("--for %s: the path is empty", s)
		}
		return JSONPath(path, value), nil
	}
	return Condition{}, fmt.Errorf("--for %q: use delete, phase=PHASE or jsonpath=.path=value", s)
}

// Deleted is met once the object no longer exists (or a new object with
// another uid took its name).
func Deleted() Condition {
	return Condition{
		Description: "be deleted",
		met:         func(obj *api.Object) bool { return obj == nil },
		describe: func(obj *api.Object, _ []string) string {
			if obj == nil {
				return "it is gone"
			}
			if obj.DeletionTimestamp == nil {
				return "it exists and is not marked for deletion"
			}
			return fmt.Sprintf("it is marked for deletion since %s and still has the finalizers [%s]",
				obj.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z"), strings.Join(obj.Finalizers, ", "))
		},
		deletion: true,
	}
}

// Phase is met when .status.phase equals p.
func Phase(p string) Condition {
	c := JSONPath(".status.phase", p)
	c.Description = "have phase=" + p
	return c
}

// JSONPath is met when the value at the dotted path (".status.x") renders
// as value. Values at paths into the kind's sensitive fields are never
// shown in messages.
func JSONPath(path, value string) Condition {
	path = "." + strings.TrimPrefix(path, ".")
	lookup := func(obj *api.Object) (string, bool) {
		v := obj.Lookup(path)
		if v == nil {
			return "", false
		}
		if s, ok := v.(string); ok {
			return s, true
		}
		return fmt.Sprint(jsonScalar(v)), true
	}
	return Condition{
		Description: fmt.Sprintf("have %s=%s", path, value),
		met: func(obj *api.Object) bool {
			if obj == nil {
				return false
			}
			got, ok := lookup(obj)
			return ok && got == value
		},
		describe: func(obj *api.Object, sensitive []string) string {
			if obj == nil {
				return "it does not exist"
			}
			got, ok := lookup(obj)
			switch {
			case !ok:
				return path + " is not set"
			case printer.IsSensitive(sensitive, path):
				return path + " has another value"
			default:
				return fmt.Sprintf("%s is %q", path, got)
			}
		},
	}
}

// jsonScalar renders whole numbers without a fraction.
func jsonScalar(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}
