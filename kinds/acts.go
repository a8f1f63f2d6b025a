package kinds

import (
	"slices"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
)

// What the objects of each kind act for: the requests their creator must
// be allowed, checked by the registry at admission (registry.Spec.Acts).
// Names are set where the object acted on is named by its name; a dataRef
// names a DataObject by its context's name, and an Execution's items are
// not created yet, so those leave it empty.

// actsOfDeployItem: running its command (types that run one) and reading
// its Target.
func actsOfDeployItem(d *api.DeployItem) []authz.Attributes {
	var out []authz.Attributes
	if api.RunsCommand(d.Spec.Type) {
		out = append(out, authz.Attributes{Verb: authz.VerbRun, Kind: api.KindDeployItem, Name: d.Name})
	}
	if d.Spec.Target != "" {
		out = append(out, authz.Attributes{Verb: authz.VerbGet, Kind: api.KindTarget, Name: d.Spec.Target})
	}
	return out
}

// actsOfExecution: what its deploy items will act for.
func actsOfExecution(e *api.Execution) []authz.Attributes {
	var out []authz.Attributes
	for _, it := range e.Spec.DeployItems {
		run := authz.Attributes{Verb: authz.VerbRun, Kind: api.KindDeployItem}
		if api.RunsCommand(it.Type) && !slices.Contains(out, run) {
			out = append(out, run)
		}
		if t := (authz.Attributes{Verb: authz.VerbGet, Kind: api.KindTarget, Name: it.Target}); it.Target != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// actsOfInstallation: reading what it imports.
func actsOfInstallation(in *api.Installation) []authz.Attributes {
	var out []authz.Attributes
	for _, d := range in.Spec.Imports.Data {
		switch {
		case d.SecretRef != nil:
			out = append(out, authz.Attributes{Verb: authz.VerbGet, Kind: api.KindSecret, Name: d.SecretRef.Name})
		case d.DataRef != "":
			if a := (authz.Attributes{Verb: authz.VerbGet, Kind: api.KindDataObject}); !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	for _, t := range in.Spec.Imports.Targets {
		out = append(out, authz.Attributes{Verb: authz.VerbGet, Kind: api.KindTarget, Name: t.Target})
	}
	return out
}

// actsOfCleaner: reading its targets (get a named one, list a selected
// kind) and deleting those marked delete.
func actsOfCleaner(c *api.Cleaner) []authz.Attributes {
	var out []authz.Attributes
	add := func(a authz.Attributes) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, t := range c.Spec.Targets {
		ref := t.Reference
		if ref.Name != "" {
			add(authz.Attributes{Verb: authz.VerbGet, Kind: ref.Kind, Name: ref.Name})
		} else {
			add(authz.Attributes{Verb: authz.VerbList, Kind: ref.Kind})
		}
		if t.Delete {
			add(authz.Attributes{Verb: authz.VerbDelete, Kind: ref.Kind, Name: ref.Name})
		}
	}
	if cp := c.Spec.Capacity; cp != nil {
		add(authz.Attributes{Verb: authz.VerbList, Kind: cp.Selector.Kind})
		add(authz.Attributes{Verb: authz.VerbDelete, Kind: cp.Selector.Kind})
	}
	return out
}

// actsOfProject: running its worker's (and jobs') commands, and every
// right it grants its workers: nobody grants what they do not hold.
func actsOfProject(p *api.Project) []authz.Attributes {
	var out []authz.Attributes
	if w := p.Spec.WorkerTemplate; len(w.Command) > 0 || w.Image != "" {
		out = append(out, authz.Attributes{Verb: authz.VerbRun, Kind: api.KindProject, Name: p.Name})
	}
	for _, r := range p.Spec.WorkerPermissions {
		for _, k := range r.Kinds {
			for _, v := range r.Verbs {
				if a := (authz.Attributes{Verb: v, Kind: k}); !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
		}
	}
	return out
}
