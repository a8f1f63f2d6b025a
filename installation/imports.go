package installation

// Import resolution: what each import of an installation is now, read
// from the caches (Secrets through the API), in the contexts the
// Landscaper model defines (a root installation's namespace, a nested
// one's parent).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/client"
	"cairn.dev/cairn/controller"
)

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
		out = append(out, r.resolveTarget(inst, t, depth))
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
		// Read as the installation's creator too: the controller lends
		// no authority of its own.
		obj, err := r.c.Get(api.ActFor(ctx, api.KindInstallation, &inst.ObjectMeta), api.KindSecret, inst.Namespace, d.SecretRef.Name)
		if errors.Is(err, api.ErrNotFound) {
			return im, nil
		}
		if err != nil {
			return im, forbidden(fmt.Errorf("read %s: %w", im.Source, err))
		}
		s, err := client.Convert[*api.Secret](obj)
		if err != nil {
			return im, fmt.Errorf("read %s: %w", im.Source, err)
		}
		// The generation is the Secret's version, never a hash of its
		// values (a hash of a short password could be reversed).
		im.Generation = s.UID + "/" + s.ResourceVersion
		if d.SecretRef.Key != "" {
			if _, ok := s.Data[d.SecretRef.Key]; !ok {
				im.Source += " (no such key)"
				return im, nil
			}
		}
		im.Value, im.Template = secretValues(s, d.SecretRef.Key)
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
				im.Template = pim.Template
				return im, nil
			}
		}
		context := contextOf(&inst.ObjectMeta)
		name := DataObjectName(context, d.DataRef)
		im.Source = "dataobject/" + name
		im.Exporters = r.exporters(inst, refKey(inst.Namespace, context, refData, d.DataRef))
		do, ok := get[*api.DataObject](r.caches.data, inst.Namespace, name)
		if !ok {
			return im, nil
		}
		im.Exists, im.Value = true, do.Data
		if len(im.Value) == 0 {
			im.Value = json.RawMessage("null")
		}
		im.Generation = Hash(do.Data)
		r.ownedBy(inst, &im, do.ControllerRef())
	}
	return im, nil
}

// secretValues returns the value of a Secret import (the key's value, or
// the map of every key's without a key), used only to check the import
// against its schema, and the value its templates see: the same shape with
// each value replaced by its reference (api.SecretReference, carrying the
// Secret's resourceVersion, so that a changed Secret renders a changed
// spec). A Secret's value is never rendered into an Execution.
func secretValues(s *api.Secret, key string) (value, template json.RawMessage) {
	ref := func(k string) string {
		return api.SecretReference{Name: s.Name, Key: k, Version: s.ResourceVersion}.String()
	}
	if key != "" {
		value, _ = json.Marshal(string(s.Data[key]))
		template, _ = json.Marshal(ref(key))
		return value, template
	}
	vals, refs := map[string]string{}, map[string]string{}
	for k, v := range s.Data {
		vals[k], refs[k] = string(v), ref(k)
	}
	value, _ = json.Marshal(vals)
	template, _ = json.Marshal(refs)
	return value, template
}

// resolveTarget resolves a target import the way resolveData resolves a
// dataRef: for a nested installation, the parent's target import of that
// name; else the Target of that name in the installation's context,
// exported by a sibling or created by hand. Its value is {name, type,
// config}, name being the Target's object name (what a deploy item's
// target names).
func (r *Reconciler) resolveTarget(inst *api.Installation, t api.TargetImport, depth int) Import {
	im := Import{Name: t.Name}
	if parent := r.caches.parent(inst); parent != nil && depth < maxDepth {
		for _, pt := range parent.Spec.Imports.Targets {
			if pt.Name == t.Target {
				pim := r.resolveTarget(parent, pt, depth+1)
				im.Source = "parent/" + parent.Name + ":" + pt.Name
				im.FromParent, im.Exists, im.Generation, im.Value = true, pim.Exists, pim.Generation, pim.Value
				return im
			}
		}
	}
	context := contextOf(&inst.ObjectMeta)
	name := TargetName(context, t.Target)
	im.Source = "target/" + name
	im.Exporters = r.exporters(inst, refKey(inst.Namespace, context, refTarget, t.Target))
	tg, ok := get[*api.Target](r.caches.targets, inst.Namespace, name)
	if !ok {
		return im
	}
	im.Exists = true
	im.Value, _ = json.Marshal(map[string]any{"name": tg.Name, "type": tg.Spec.Type, "config": tg.Spec.Config})
	im.Generation = Hash(im.Value)
	r.ownedBy(inst, &im, tg.ControllerRef())
	return im
}

// exporters names the siblings of inst exporting the object of key.
func (r *Reconciler) exporters(inst *api.Installation, key string) []string {
	var out []string
	for _, s := range r.caches.byIndex(indexExports, key) {
		if s.Name != inst.Name {
			out = append(out, s.Name)
		}
	}
	return out
}

// ownedBy records the installation owning an imported object, if any:
// the import's generation is then that installation's configGeneration,
// which it records only once it has published the object.
func (r *Reconciler) ownedBy(inst *api.Installation, im *Import, ref *api.OwnerReference) {
	if ref == nil || ref.Kind != api.KindInstallation {
		return
	}
	im.Owner = ref.Name
	if e, ok := get[*api.Installation](r.caches.insts, inst.Namespace, ref.Name); ok {
		im.Generation = "config/" + e.Status.ConfigGeneration
	}
}

// readData reads a DataObject's value through the API (nil when it does
// not exist).
func (r *Reconciler) readData(ctx context.Context, ns, name string) (any, error) {
	obj, err := r.c.Get(ctx, api.KindDataObject, ns, name)
	if errors.Is(err, api.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read DataObject %s: %w", name, err)
	}
	return decodeJSON(obj.Field("data")), nil
}

// readTarget reads a Target through the API as a target import's value
// (nil when it does not exist).
func (r *Reconciler) readTarget(ctx context.Context, ns, name string) (any, error) {
	obj, err := r.c.Get(ctx, api.KindTarget, ns, name)
	if errors.Is(err, api.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Target %s: %w", name, err)
	}
	tg, err := controller.Decode[*api.Target](obj)
	if err != nil {
		return nil, err
	}
	return map[string]any{"name": tg.Name, "type": tg.Spec.Type, "config": decodeJSON(tg.Spec.Config)}, nil
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
