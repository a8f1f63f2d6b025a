package installation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/informer"
)

// The indexes the controller adds to the shared Installation informer.
const (
	// indexExports finds the installations that export a dataRef into a
	// context: "ns/context/dataRef".
	indexExports = "installation.exports"
	// indexImports finds the installations that import a dataRef from a
	// context: "ns/context/dataRef".
	indexImports = "installation.imports"
	// indexBlueprint finds the installations whose blueprint is a
	// Blueprint: "ns/name".
	indexBlueprint = "installation.blueprint"
)

// contextOf is the context an installation lives in: its parent's name,
// or "" for a root installation.
func contextOf(m *api.ObjectMeta) string {
	if ref := m.ControllerRef(); ref != nil && ref.Kind == api.KindInstallation {
		return ref.Name
	}
	return ""
}

func ctxKey(ns, context, dataRef string) string { return ns + "/" + context + "/" + dataRef }

func decodeInst(obj *api.Object) *api.Installation {
	in, err := client.Convert[*api.Installation](obj)
	if err != nil {
		return nil
	}
	return in
}

// refs is the part of an installation's spec the indexes read, decoded
// from the spec alone (cheaper than the whole object, on every event).
type refs struct {
	Blueprint struct {
		Ref string `json:"ref"`
	} `json:"blueprint"`
	Imports struct {
		Data []struct {
			DataRef string `json:"dataRef"`
		} `json:"data"`
	} `json:"imports"`
	Exports struct {
		Data []struct {
			DataRef string `json:"dataRef"`
		} `json:"data"`
	} `json:"exports"`
}

func refsOf(obj *api.Object) *refs {
	var r refs
	if err := json.Unmarshal(obj.Field(api.FieldSpec), &r); err != nil {
		return nil
	}
	return &r
}

func indexExportsFunc(obj *api.Object) []string {
	r := refsOf(obj)
	if r == nil {
		return nil
	}
	var out []string
	for _, e := range r.Exports.Data {
		out = append(out, ctxKey(obj.Namespace, contextOf(&obj.ObjectMeta), e.DataRef))
	}
	return out
}

func indexImportsFunc(obj *api.Object) []string {
	r := refsOf(obj)
	if r == nil {
		return nil
	}
	var out []string
	for _, d := range r.Imports.Data {
		if d.DataRef != "" {
			out = append(out, ctxKey(obj.Namespace, contextOf(&obj.ObjectMeta), d.DataRef))
		}
	}
	return out
}

func indexBlueprintFunc(obj *api.Object) []string {
	r := refsOf(obj)
	if r == nil || r.Blueprint.Ref == "" {
		return nil
	}
	return []string{api.Key(obj.Namespace, r.Blueprint.Ref)}
}

// subinstallationsOf reads status.subinstallations alone.
func subinstallationsOf(obj *api.Object) []api.NamedRef {
	var st struct {
		Subinstallations []api.NamedRef `json:"subinstallations"`
	}
	if raw := obj.Field(api.FieldStatus); len(raw) > 0 {
		_ = json.Unmarshal(raw, &st)
	}
	return st.Subinstallations
}

// caches are the shared informers the controller reads.
type caches struct {
	insts, execs, items, data, targets, blueprints *informer.Informer
}

func get[T api.Resource](inf *informer.Informer, ns, name string) (T, bool) {
	var zero T
	obj, ok := inf.Get(ns, name)
	if !ok {
		return zero, false
	}
	v, err := client.Convert[T](obj)
	if err != nil {
		return zero, false
	}
	return v, true
}

// byIndex returns the installations under an index value, sorted by name.
func (c *caches) byIndex(index, value string) []*api.Installation {
	objs, err := c.insts.ByIndex(index, value)
	if err != nil {
		return nil
	}
	out := make([]*api.Installation, 0, len(objs))
	for _, o := range objs {
		if in := decodeInst(o); in != nil {
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// parent returns the installation's parent from the cache, or nil.
func (c *caches) parent(inst *api.Installation) *api.Installation {
	ctx := contextOf(&inst.ObjectMeta)
	if ctx == "" {
		return nil
	}
	p, ok := get[*api.Installation](c.insts, inst.Namespace, ctx)
	if !ok {
		return nil
	}
	return p
}

// siblings returns the other installations of inst's context, by name:
// the parent's other nested installations, or the namespace's other root
// installations. Only those that export or import a dataRef matter to the
// flows, so they are found through the indexes.
func (c *caches) siblings(inst *api.Installation) map[string]*api.Installation {
	out := map[string]*api.Installation{}
	ctx := contextOf(&inst.ObjectMeta)
	add := func(list []*api.Installation) {
		for _, s := range list {
			if s.Name != inst.Name {
				out[s.Name] = s
			}
		}
	}
	for _, d := range inst.Spec.Imports.Data {
		if d.DataRef != "" {
			add(c.byIndex(indexExports, ctxKey(inst.Namespace, ctx, d.DataRef)))
		}
	}
	for _, e := range inst.Spec.Exports.Data {
		add(c.byIndex(indexImports, ctxKey(inst.Namespace, ctx, e.DataRef)))
	}
	return out
}

// importers returns the siblings that import what inst exports.
func (c *caches) importers(inst *api.Installation) []*api.Installation {
	var out []*api.Installation
	ctx := contextOf(&inst.ObjectMeta)
	seen := map[string]bool{}
	for _, e := range inst.Spec.Exports.Data {
		for _, s := range c.byIndex(indexImports, ctxKey(inst.Namespace, ctx, e.DataRef)) {
			if s.Name != inst.Name && !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, s)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// execution returns the installation's execution (named like it and
// controlled by it), or nil.
func (c *caches) execution(inst *api.Installation) *api.Execution {
	e, ok := get[*api.Execution](c.execs, inst.Namespace, inst.Name)
	if !ok || !controlledBy(&e.ObjectMeta, inst) {
		return nil
	}
	return e
}

// subinstallations returns the installations inst controls, by name.
func (c *caches) subinstallations(inst *api.Installation) []*api.Installation {
	objs, err := c.insts.ByIndex(informer.OwnerUIDIndex, inst.UID)
	if err != nil {
		return nil
	}
	var out []*api.Installation
	for _, o := range objs {
		if in := decodeInst(o); in != nil && controlledBy(&in.ObjectMeta, inst) {
			out = append(out, in)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func controlledBy(m *api.ObjectMeta, owner *api.Installation) bool {
	ref := m.ControllerRef()
	return ref != nil && ref.Kind == api.KindInstallation && ref.UID == owner.UID
}

// errBlueprintNotFound: the Blueprint an installation names does not exist.
var errBlueprintNotFound = errors.New("blueprint not found")

// source is an installation's blueprint as the caches hold it: its spec
// and its version ("uid/generation" of a Blueprint, "" for an inline
// one), or why there is none.
type source struct {
	spec    *api.BlueprintSpec
	version string
	err     error
}

// blueprint returns the installation's blueprint.
func (c *caches) blueprint(inst *api.Installation) source {
	if inst.Spec.Blueprint.Inline != nil {
		return source{spec: inst.Spec.Blueprint.Inline}
	}
	b, ok := get[*api.Blueprint](c.blueprints, inst.Namespace, inst.Spec.Blueprint.Ref)
	if !ok {
		return source{err: fmt.Errorf("%w: Blueprint %s", errBlueprintNotFound, inst.Spec.Blueprint.Ref)}
	}
	return source{spec: &b.Spec, version: b.UID + "/" + strconv.FormatInt(b.Generation, 10)}
}

// maxDepth bounds the walk up the tree resolving parents' imports.
const maxDepth = 32

// resolveImports resolves every import of inst. Secrets are read through
// the API (they are not cached); everything else comes from the caches.
// Only a failure to read a Secret is an error.
func (r *Reconciler) resolveImports(ctx context.Context, inst *api.Installation, depth int) ([]Import, error) {
	var out []Import
	for _, d := range inst.Spec.Imports.Data {
		im, err := r.resolveData(ctx, inst, d, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	for _, t := range inst.Spec.Imports.Targets {
		im := Import{Name: t.Name, Source: "target/" + t.Target}
		if tg, ok := get[*api.Target](r.caches.targets, inst.Namespace, t.Target); ok {
			im.Exists = true
			im.Generation = "g" + strconv.FormatInt(tg.Generation, 10)
			im.Value, _ = json.Marshal(map[string]any{"name": tg.Name, "type": tg.Spec.Type, "config": tg.Spec.Config})
		}
		out = append(out, im)
	}
	return out, nil
}

func (r *Reconciler) resolveData(ctx context.Context, inst *api.Installation, d api.DataImport, depth int) (Import, error) {
	im := Import{Name: d.Name}
	switch {
	case len(d.Value) > 0:
		im.Source, im.Exists, im.Generation, im.Value = "value", true, Hash(d.Value), d.Value
	case d.SecretRef != nil:
		im.Source, im.Secret = "secret/"+d.SecretRef.Name, true
		if d.SecretRef.Key != "" {
			im.Source += ":" + d.SecretRef.Key
		}
		obj, err := r.c.Get(ctx, api.KindSecret, inst.Namespace, d.SecretRef.Name)
		if errors.Is(err, api.ErrNotFound) {
			return im, nil
		}
		if err != nil {
			return im, fmt.Errorf("read %s: %w", im.Source, err)
		}
		s, err := client.Convert[*api.Secret](obj)
		if err != nil {
			return im, fmt.Errorf("read %s: %w", im.Source, err)
		}
		// The generation is the Secret's version, never a hash of its
		// values (a hash of a short password could be reversed).
		im.Generation = s.UID + "/" + s.ResourceVersion
		if d.SecretRef.Key != "" {
			v, ok := s.Data[d.SecretRef.Key]
			if !ok {
				im.Source += " (no such key)"
				return im, nil
			}
			im.Value, _ = json.Marshal(string(v))
		} else {
			m := map[string]string{}
			for k, v := range s.Data {
				m[k] = string(v)
			}
			im.Value, _ = json.Marshal(m)
		}
		im.Exists = true
	default:
		parent := r.caches.parent(inst)
		if parent != nil && depth < maxDepth {
			for _, pd := range parent.Spec.Imports.Data {
				if pd.Name != d.DataRef {
					continue
				}
				pim, err := r.resolveData(ctx, parent, pd, depth+1)
				if err != nil {
					return im, err
				}
				im.Source = "parent/" + parent.Name + ":" + pd.Name
				im.FromParent, im.Exists, im.Generation, im.Value, im.Secret = true, pim.Exists, pim.Generation, pim.Value, pim.Secret
				return im, nil
			}
		}
		context := contextOf(&inst.ObjectMeta)
		name := DataObjectName(context, d.DataRef)
		im.Source = "dataobject/" + name
		for _, s := range r.caches.byIndex(indexExports, ctxKey(inst.Namespace, context, d.DataRef)) {
			if s.Name != inst.Name {
				im.Exporters = append(im.Exporters, s.Name)
			}
		}
		do, ok := get[*api.DataObject](r.caches.data, inst.Namespace, name)
		if !ok {
			return im, nil
		}
		im.Exists, im.Value = true, do.Data
		if len(im.Value) == 0 {
			im.Value = json.RawMessage("null")
		}
		im.Generation = Hash(do.Data)
		if ref := do.ControllerRef(); ref != nil && ref.Kind == api.KindInstallation {
			im.Owner = ref.Name
			if e, ok := get[*api.Installation](r.caches.insts, inst.Namespace, ref.Name); ok {
				im.Generation = "config/" + e.Status.ConfigGeneration
			}
		}
	}
	return im, nil
}

// dataOf reads a DataObject's value from the cache (nil when absent).
func (r *Reconciler) dataOf(ns, name string) any {
	do, ok := get[*api.DataObject](r.caches.data, ns, name)
	if !ok || len(do.Data) == 0 {
		return nil
	}
	return decodeJSON(do.Data)
}

func decodeJSON(raw json.RawMessage) any {
	var v any
	dec := json.NewDecoder(bytesReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return v
}
