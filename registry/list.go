package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/store"
)

// listChunk is how many keys a List reads from the store at a time when a
// label selector may discard some of them.
const listChunk = 500

// continueToken is the opaque position of the next page.
type continueToken struct {
	Rev  int64  `json:"rev"`
	From string `json:"from"`
}

func parseSelector(s string) (labels.Selector, error) {
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, api.NewBadRequest("labelSelector %q is not valid: %v", s, err)
	}
	return sel, nil
}

// List returns the objects of a kind in namespace ns (every namespace when
// ns is ""), in name order, filtered by opts.LabelSelector and paged by
// opts.Limit and opts.Continue. Every page of one list is read at the same
// store revision, given as the list's resourceVersion.
//
// It blocks on one store read per page (per 500 objects with a selector).
//
// Errors: Unauthorized, Forbidden, BadRequest (negative limit, bad
// selector or continue token), Gone (the continue token's revision has
// been compacted: list again), ServiceUnavailable, Timeout.
func (r *Registry) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	k, _, err := r.admit(ctx, kind, authz.Attributes{Verb: authz.VerbList, Namespace: ns})
	if err != nil {
		return nil, err
	}
	l, err := r.list(ctx, k, ns, opts)
	if err != nil {
		return nil, apiError(err, k.Kind, "")
	}
	return l, nil
}

// list is List without authorization.
func (r *Registry) list(ctx context.Context, k *Kind, ns string, opts api.ListOptions) (*api.List, error) {
	if opts.Limit < 0 {
		return nil, api.NewBadRequest("limit must not be negative, got %d", opts.Limit)
	}
	sel, err := parseSelector(opts.LabelSelector)
	if err != nil {
		return nil, err
	}
	prefix := r.key(k, ns, "")
	pos := continueToken{From: prefix}
	if opts.Continue != "" {
		if pos, err = decodeContinue(opts.Continue, prefix); err != nil {
			return nil, err
		}
	}
	list := &api.List{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: api.ListKind(k.Kind)}, Items: []*api.Object{}}
	for {
		chunk := int64(listChunk)
		if opts.Limit > 0 && sel.Empty() {
			chunk = opts.Limit - int64(len(list.Items)) + 1 // one more tells whether a next page exists
		}
		page, err := r.store.List(ctx, prefix, store.ListOptions{Revision: pos.Rev, From: pos.From, Limit: chunk})
		if err != nil {
			return nil, err
		}
		pos.Rev = page.Revision
		for _, kv := range page.KVs {
			if opts.Limit > 0 && int64(len(list.Items)) == opts.Limit {
				list.Continue = encodeContinue(continueToken{Rev: pos.Rev, From: kv.Key})
				list.ResourceVersion = formatRV(pos.Rev)
				return list, nil
			}
			obj, err := r.decode(k, kv)
			if err != nil {
				return nil, err
			}
			if sel.Matches(labels.Set(obj.Labels)) {
				list.Items = append(list.Items, obj)
			}
			pos.From = kv.Key + "\x00"
		}
		if !page.More {
			list.ResourceVersion = formatRV(pos.Rev)
			return list, nil
		}
	}
}

func encodeContinue(t continueToken) string {
	raw, _ := json.Marshal(t) // a struct of int and string always marshals
	return base64.RawURLEncoding.EncodeToString(raw)
}

func decodeContinue(s, prefix string) (continueToken, error) {
	var t continueToken
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(raw, &t)
	}
	if err != nil || t.Rev <= 0 || !strings.HasPrefix(t.From, prefix) {
		return t, api.NewBadRequest("continue token is not valid for this list: use the token returned by the previous page")
	}
	return t, nil
}
