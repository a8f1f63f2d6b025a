package registry

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry/internal/watchcache"
)

// selection parses the label and field selectors of opts. A field
// selector may name metadata.name and metadata.namespace only (with =,
// == or !=); any other field is BadRequest, never ignored.
func selection(opts api.ListOptions) (watchcache.Selection, error) {
	var s watchcache.Selection
	var err error
	if s.Labels, err = parseSelector(opts.LabelSelector); err != nil {
		return s, err
	}
	if s.Fields, err = parseFieldSelector(opts.FieldSelector); err != nil {
		return s, err
	}
	return s, nil
}

func parseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, api.NewBadRequest("labelSelector %q is not valid: %v", s, err)
	}
	return sel, nil
}

func parseFieldSelector(s string) (fields.Selector, error) {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return nil, api.NewBadRequest("fieldSelector %q is not valid: %v", s, err)
	}
	for _, r := range sel.Requirements() {
		if r.Field != watchcache.FieldName && r.Field != watchcache.FieldNamespace {
			st := api.NewBadRequest("fieldSelector: the field %q cannot be selected: only %s and %s can",
				r.Field, watchcache.FieldName, watchcache.FieldNamespace)
			st.Details = &api.StatusDetails{Causes: []api.StatusCause{{Field: "fieldSelector", Type: "FieldValueNotSupported",
				Message: "only " + watchcache.FieldName + " and " + watchcache.FieldNamespace + " can be selected"}}}
			return nil, st
		}
	}
	return sel, nil
}

// narrow returns the namespace a list or watch of kind k in ns needs to
// read: ns, or when ns is "" and the field selector asks for exactly one
// namespace, that one (a narrower store prefix, same result).
func narrow(k *Kind, ns string, sel watchcache.Selection) string {
	if ns != "" || !k.Namespaced || sel.Fields == nil {
		return ns
	}
	if v, ok := sel.Fields.RequiresExactMatch(watchcache.FieldNamespace); ok {
		return v
	}
	return ns
}
