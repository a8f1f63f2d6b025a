package installation

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/controller"
	"cairn.dev/cairn/informer"
)

// The indexes the controller adds to the shared Installation informer.
const (
	// indexExports finds the installations that export a DataObject or a
	// Target into a context (see refKey).
	indexExports = "installation.exports"
	// indexImports finds the installations that import a DataObject or a
	// Target from a context (see refKey).
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

// The kinds of object an installation exports to, or imports from, a
// context, as refKey names them.
const (
	refData   = "data"
	refTarget = "target"
)

// refKey is the index value of the object of kind (refData or refTarget)
// named ref in a context: "ns/context/kind/ref".
func refKey(ns, context, kind, ref string) string { return ns + "/" + context + "/" + kind + "/" + ref }

func decodeInst(obj *api.Object) *api.Installation {
	in, err := controller.Decode[*api.Installation](obj)
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
	Imports api.InstallationImports `json:"imports"`
	Exports api.InstallationExports `json:"exports"`
}

func refsOf(obj *api.Object) *refs {
	var r refs
	if err := json.Unmarshal(obj.Field(api.FieldSpec), &r); err != nil {
		return nil
	}
	return &r
}

func indexExportsFunc(obj *api.Object) []string {
	if r := refsOf(obj); r != nil {
		return exportKeys(obj.Namespace, contextOf(&obj.ObjectMeta), r.Exports)
	}
	return nil
}

func indexImportsFunc(obj *api.Object) []string {
	if r := refsOf(obj); r != nil {
		return importKeys(obj.Namespace, contextOf(&obj.ObjectMeta), r.Imports)
	}
	return nil
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
	v, err := controller.Decode[T](obj)
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

// importKeys and exportKeys are the index values of what an installation
// of namespace ns and context ctx imports from, and exports to, its
// context.
func importKeys(ns, ctx string, im api.InstallationImports) []string {
	var out []string
	for _, d := range im.Data {
		if d.DataRef != "" {
			out = append(out, refKey(ns, ctx, refData, d.DataRef))
		}
	}
	for _, t := range im.Targets {
		out = append(out, refKey(ns, ctx, refTarget, t.Target))
	}
	return out
}

func exportKeys(ns, ctx string, ex api.InstallationExports) []string {
	var out []string
	for _, e := range ex.Data {
		out = append(out, refKey(ns, ctx, refData, e.DataRef))
	}
	for _, e := range ex.Targets {
		out = append(out, refKey(ns, ctx, refTarget, e.Target))
	}
	return out
}

// siblings returns the other installations of inst's context, by name:
// the parent's other nested installations, or the namespace's other root
// installations. Only those that export what inst imports, or import what
// it exports (DataObjects and Targets), matter to the flows, so they are
// found through the indexes.
func (c *caches) siblings(inst *api.Installation) map[string]*api.Installation {
	out := map[string]*api.Installation{}
	add := func(list []*api.Installation) {
		for _, s := range list {
			if s.Name != inst.Name {
				out[s.Name] = s
			}
		}
	}
	for _, k := range importKeys(inst.Namespace, contextOf(&inst.ObjectMeta), inst.Spec.Imports) {
		add(c.byIndex(indexExports, k))
	}
	for _, k := range exportKeys(inst.Namespace, contextOf(&inst.ObjectMeta), inst.Spec.Exports) {
		add(c.byIndex(indexImports, k))
	}
	return out
}

// importers returns the siblings that import what inst exports.
func (c *caches) importers(inst *api.Installation) []*api.Installation {
	var out []*api.Installation
	seen := map[string]bool{}
	for _, k := range exportKeys(inst.Namespace, contextOf(&inst.ObjectMeta), inst.Spec.Exports) {
		for _, s := range c.byIndex(indexImports, k) {
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
