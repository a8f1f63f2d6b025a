// Package column renders a kind's printer columns (api.Column): the cells
// `cairn get` prints and the server's Kubernetes Tables carry, from one
// definition, so that kubectl and cairn show the same table.
package column

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"cairn.dev/cairn/api"
)

// Hidden is the cell of a column inside a sensitive field.
const Hidden = "<hidden>"

// None is the cell of a value that is absent.
const None = "<none>"

// Cell renders column c of an object given as decoded JSON (m), with ages
// measured to now. A column inside a field of sensitive (the kind's
// api.KindInfo.Sensitive) shows Hidden, unless it counts entries.
func Cell(m map[string]any, c api.Column, sensitive []string, now time.Time) string {
	if IsSensitive(sensitive, c.Path) && c.Format != "count" {
		return Hidden
	}
	var v any = m
	for _, part := range strings.Split(strings.TrimPrefix(c.Path, "."), ".") {
		v = member(v, part)
	}
	switch c.Format {
	case "age":
		s, ok := v.(string)
		if !ok {
			return None
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return s
		}
		return Age(t, now)
	case "count":
		switch x := v.(type) {
		case []any:
			return fmt.Sprint(len(x))
		case map[string]any:
			return fmt.Sprint(len(x))
		case nil:
			return "0"
		}
	}
	return formatValue(v)
}

// member returns v's member part: a map's value at key part, or in a list
// of objects (such as conditions) the object whose "type" is part; nil
// when there is none.
func member(v any, part string) any {
	switch x := v.(type) {
	case map[string]any:
		return x[part]
	case []any:
		for _, e := range x {
			if em, ok := e.(map[string]any); ok && em["type"] == part {
				return em
			}
		}
	}
	return nil
}

// formatValue renders a JSON value for a table cell.
func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return None
	case string:
		return x
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprint(int64(x))
		}
		return fmt.Sprint(x)
	case bool:
		return fmt.Sprint(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return "<invalid>"
		}
		return string(b)
	}
}

// Age renders the time since t the way kubectl does ("5s", "3m20s", "2h",
// "4d"); a zero t is "<unknown>".
func Age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// IsSensitive reports whether the dotted path (".data.password",
// "stringData") lies inside one of the sensitive top-level fields.
func IsSensitive(sensitive []string, path string) bool {
	first, _, _ := strings.Cut(strings.TrimPrefix(path, "."), ".")
	return slices.Contains(sensitive, first)
}

// HasAge reports whether the kind's columns include an AGE column (else
// tables add one, from metadata.creationTimestamp, as kubectl does).
func HasAge(cols []api.Column) bool {
	return slices.ContainsFunc(cols, func(c api.Column) bool { return strings.EqualFold(c.Name, "AGE") })
}
