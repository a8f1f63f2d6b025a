package cleaner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"cairn.dev/cairn/api"
)

// ErrUnresolvable is wrapped by the errors of Resolve: a target's objects
// could not be read (its kind is not served, or its cache is not ready).
var ErrUnresolvable = errors.New("cleaner: target cannot be resolved")

// Source reads the objects a Cleaner's targets name, typically from the
// shared informers' caches. The objects returned are shared: never
// modified.
type Source interface {
	// Get returns the object kind ns/name; ok is false when there is
	// none. It fails (wrapping ErrUnresolvable) when kind cannot be read.
	Get(kind, ns, name string) (obj *api.Object, ok bool, err error)
	// Select returns the objects of kind in ns whose labels include
	// labels, sorted by name. It fails (wrapping ErrUnresolvable) when
	// kind cannot be read.
	Select(kind, ns string, labels map[string]string) ([]*api.Object, error)
	// LastChange returns the lastChangeTime of o, an object of kind
	// (LastChangeTime over what the source observed). It never blocks.
	LastChange(kind string, o *api.Object) time.Time
}

// Found is one object a target resolved to.
type Found struct {
	// Target is the name of the target that found it.
	Target string
	Kind   string
	Name   string
	UID    string
	// Delete and Evaluated copy the target's flags.
	Delete, Evaluated bool
	// Keep: the object carries cairn.dev/keep, so it is never deleted.
	Keep bool
}

// Ref is the object's entry in status.resolvedTargets: "Kind/name".
func (f Found) Ref() string { return f.Kind + "/" + f.Name }

// Resolution is what a Cleaner's targets resolved to at one moment.
type Resolution struct {
	// Vars holds the CEL value of every evaluated target: the object as
	// JSON-like maps (nil when a named object does not exist) or
	// {"items": [...]} for a selector. A Secret's values are redacted.
	Vars map[string]any
	// Found lists every object found, in target order.
	Found []Found
	// CapacityKind and Capacity are the objects spec.capacity selected
	// (none without a capacity).
	CapacityKind string
	CapacityMax  int
	Capacity     []CapacityItem
}

// Resolved returns status.resolvedTargets: the evaluated objects found,
// sorted, without duplicates.
func (r Resolution) Resolved() []string {
	var out []string
	for _, f := range r.Found {
		if f.Evaluated {
			out = append(out, f.Ref())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ToDelete returns the objects of the targets marked delete, in target
// order, each once, but those that carry cairn.dev/keep (Kept lists them).
func (r Resolution) ToDelete() []Found {
	var out []Found
	seen := map[string]bool{}
	for _, f := range r.Found {
		if f.Delete && !f.Keep && !seen[f.UID] {
			seen[f.UID] = true
			out = append(out, f)
		}
	}
	return out
}

// Kept returns the objects of the targets marked delete that carry
// cairn.dev/keep, which no Cleaner deletes, in target order, each once.
func (r Resolution) Kept() []Found {
	var out []Found
	seen := map[string]bool{}
	for _, f := range r.Found {
		if f.Delete && f.Keep && !seen[f.UID] {
			seen[f.UID] = true
			out = append(out, f)
		}
	}
	return out
}

// Resolve reads every target of c (evaluated or not) through src.
// Missing named objects are not an error: their variable is null. It fails
// at the first target that cannot be read, naming it.
func Resolve(c *api.Cleaner, src Source) (Resolution, error) {
	res := Resolution{Vars: map[string]any{}}
	for _, t := range c.Spec.Targets {
		ref := t.Reference
		var objs []*api.Object
		if ref.Name != "" {
			o, ok, err := src.Get(ref.Kind, c.Namespace, ref.Name)
			if err != nil {
				return Resolution{}, fmt.Errorf("target %s (%s %s): %w", t.Name, ref.Kind, ref.Name, err)
			}
			if ok {
				objs = []*api.Object{o}
			}
		} else {
			var err error
			objs, err = src.Select(ref.Kind, c.Namespace, ref.MatchLabels)
			if err != nil {
				return Resolution{}, fmt.Errorf("target %s (%s selected by %s): %w", t.Name, ref.Kind, selectorString(ref.MatchLabels), err)
			}
		}
		for _, o := range objs {
			res.Found = append(res.Found, Found{Target: t.Name, Kind: ref.Kind, Name: o.Name, UID: o.UID,
				Delete: t.Delete, Evaluated: t.Evaluated(), Keep: Kept(o)})
		}
		if !t.Evaluated() {
			continue
		}
		if ref.Name != "" {
			if len(objs) == 0 {
				res.Vars[t.Name] = nil
			} else {
				v, err := Value(ref.Kind, objs[0])
				if err != nil {
					return Resolution{}, fmt.Errorf("target %s: %w", t.Name, err)
				}
				v[VarLastChangeTime] = src.LastChange(ref.Kind, objs[0])
				res.Vars[t.Name] = v
			}
			continue
		}
		items := make([]any, 0, len(objs))
		for _, o := range objs {
			v, err := Value(ref.Kind, o)
			if err != nil {
				return Resolution{}, fmt.Errorf("target %s: %w", t.Name, err)
			}
			v[VarLastChangeTime] = src.LastChange(ref.Kind, o)
			items = append(items, v)
		}
		res.Vars[t.Name] = map[string]any{"items": items}
	}
	if err := resolveCapacity(c, src, &res); err != nil {
		return Resolution{}, err
	}
	return res, nil
}

// VarLastChangeTime is the field of each target object's variable that
// holds its LastChangeTime (a CEL timestamp).
const VarLastChangeTime = "lastChangeTime"

// resolveCapacity reads the objects c's capacity selects into res.
func resolveCapacity(c *api.Cleaner, src Source, res *Resolution) error {
	cp := c.Spec.Capacity
	if cp == nil {
		return nil
	}
	objs, err := src.Select(cp.Selector.Kind, c.Namespace, cp.Selector.MatchLabels)
	if err != nil {
		return fmt.Errorf("capacity (%s selected by %s): %w", cp.Selector.Kind, selectorString(cp.Selector.MatchLabels), err)
	}
	res.CapacityKind, res.CapacityMax = cp.Selector.Kind, cp.Max
	for _, o := range objs {
		res.Capacity = append(res.Capacity, CapacityItem{Name: o.Name, UID: o.UID, Created: o.CreationTimestamp,
			Deleting: o.Deleting(), Keep: Kept(o)})
	}
	return nil
}

// Redacted replaces the values of a Secret's data in Value's output.
const Redacted = "<redacted>"

// Value turns an object of kind into the value its CEL variable holds: its JSON
// as maps, lists, strings, numbers (an int64 for a whole number that fits,
// as the schemas type integers; a float64 otherwise) and booleans. The values of a
// Secret's data are replaced by Redacted (its keys stay): conditions may
// test which keys a Secret has, never what they hold, so no evaluation
// error or trace can carry a secret value.
func Value(kind string, o *api.Object) (map[string]any, error) {
	m := make(map[string]any, len(o.Fields)+3)
	if o.APIVersion != "" {
		m["apiVersion"] = o.APIVersion
	}
	if o.Kind != "" {
		m["kind"] = o.Kind
	}
	m["metadata"] = metaValue(&o.ObjectMeta)
	for k, raw := range o.Fields {
		if len(raw) == 0 {
			continue
		}
		v, err := decodeValue(raw)
		if err != nil {
			return nil, fmt.Errorf("decode %s of %s %s: %w", k, o.Kind, o.Name, err)
		}
		if v != nil {
			m[k] = v
		}
	}
	if kind == api.KindSecret || o.Kind == api.KindSecret {
		for _, f := range []string{"data", "stringData"} {
			if d, ok := m[f].(map[string]any); ok {
				for k := range d {
					d[k] = Redacted
				}
			}
		}
	}
	return m, nil
}

// decodeValue decodes JSON as json.Unmarshal into an any does, but for
// whole numbers, which are int64s (when they fit).
func decodeValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return numbers(v), nil
}

// numbers replaces the json.Numbers of v (in place) by int64 or float64.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// metaValue is the metadata as its JSON decodes (what json.Unmarshal of
// the encoded ObjectMeta into an any gives), built without encoding it: the
// evaluation path's largest cost otherwise.
func metaValue(md *api.ObjectMeta) map[string]any {
	m := map[string]any{}
	str := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	str("name", md.Name)
	str("generateName", md.GenerateName)
	str("namespace", md.Namespace)
	str("uid", md.UID)
	str("resourceVersion", md.ResourceVersion)
	if md.Generation != 0 {
		m["generation"] = md.Generation
	}
	if !md.CreationTimestamp.IsZero() {
		m["creationTimestamp"] = md.CreationTimestamp.Format(time.RFC3339Nano)
	}
	if md.DeletionTimestamp != nil {
		m["deletionTimestamp"] = md.DeletionTimestamp.Format(time.RFC3339Nano)
	}
	strMap := func(k string, in map[string]string) {
		if len(in) == 0 {
			return
		}
		out := make(map[string]any, len(in))
		for k, v := range in {
			out[k] = v
		}
		m[k] = out
	}
	strMap("labels", md.Labels)
	strMap("annotations", md.Annotations)
	if len(md.Finalizers) > 0 {
		fs := make([]any, len(md.Finalizers))
		for i, f := range md.Finalizers {
			fs[i] = f
		}
		m["finalizers"] = fs
	}
	if len(md.OwnerReferences) > 0 {
		refs := make([]any, len(md.OwnerReferences))
		for i, r := range md.OwnerReferences {
			ref := map[string]any{"kind": r.Kind, "name": r.Name, "uid": r.UID}
			if r.APIVersion != "" {
				ref["apiVersion"] = r.APIVersion
			}
			if r.Controller {
				ref["controller"] = true
			}
			refs[i] = ref
		}
		m["ownerReferences"] = refs
	}
	return m
}

// selectorString renders labels as "k=v,k2=v2".
func selectorString(labels map[string]string) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if s != "" {
			s += ","
		}
		s += k + "=" + labels[k]
	}
	return s
}

// matches reports whether labels include every pair of sel.
func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

// sortByName sorts objects by name.
func sortByName(objs []*api.Object) {
	slices.SortFunc(objs, func(a, b *api.Object) int { return strings.Compare(a.Name, b.Name) })
}
