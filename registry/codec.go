package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/store"
)

// stored is an object as read from the store, with its mod revision.
type stored struct {
	obj *api.Object
	rev int64
	// size is the stored value's length in bytes.
	size int
	// plain is the object's stored JSON (decrypted) when it was read from
	// the store, nil when it came from the watch cache.
	plain []byte
}

// cached is the latest version of key that the kind's watch cache holds,
// if it holds one (watchcache.Caches.Latest), copied: the cache shares it
// with its watchers.
func (r *Registry) cached(k *Kind, key string) (*stored, bool) {
	l, ok := r.watch.Latest(k.Kind, key)
	if !ok {
		return nil, false
	}
	return &stored{obj: l.Obj.DeepCopy(), rev: l.Rev, size: l.Size}, true
}

// fromStore is the stored object of kv.
func (r *Registry) fromStore(k *Kind, kv *store.KV) (*stored, error) {
	obj, plain, err := r.decodePlain(k, kv)
	if err != nil {
		return nil, err
	}
	return &stored{obj: obj, rev: kv.ModRevision, size: len(kv.Value), plain: plain}, nil
}

// encode serializes obj for the store: resourceVersion is not stored (it is
// the key's mod revision) and encrypted kinds are sealed.
func (r *Registry) encode(k *Kind, obj *api.Object) ([]byte, error) {
	plain, err := storedJSON(k, obj)
	if err != nil {
		return nil, err
	}
	return r.seal(k, obj, plain)
}

// storedJSON is the JSON obj is stored as, before any sealing: obj
// without its resourceVersion.
func storedJSON(k *Kind, obj *api.Object) ([]byte, error) {
	c := *obj
	c.ResourceVersion = ""
	raw, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("registry: encode %s: %w", k.Kind, err)
	}
	return raw, nil
}

// seal is the stored value of obj's JSON plain: plain itself, or for an
// encrypted kind its ciphertext.
func (r *Registry) seal(k *Kind, obj *api.Object, plain []byte) ([]byte, error) {
	if k.Encrypted {
		return r.enc.encrypt(plain, r.key(k, obj.Namespace, obj.Name))
	}
	return plain, nil
}

// decode reads a stored value and sets resourceVersion from its revision.
func (r *Registry) decode(k *Kind, kv *store.KV) (*api.Object, error) {
	obj, _, err := r.decodePlain(k, kv)
	return obj, err
}

// decodePlain is decode, also returning the object's stored JSON
// (decrypted).
func (r *Registry) decodePlain(k *Kind, kv *store.KV) (*api.Object, []byte, error) {
	raw := kv.Value
	if k.Encrypted {
		var err error
		if raw, err = r.enc.decrypt(raw, kv.Key); err != nil {
			return nil, nil, fmt.Errorf("%w (key %s)", err, kv.Key)
		}
	}
	obj := &api.Object{}
	// UnmarshalJSON itself: json.Unmarshal would scan the value once more
	// to check it first, and UnmarshalJSON checks it as it reads.
	if err := obj.UnmarshalJSON(raw); err != nil {
		return nil, nil, fmt.Errorf("registry: stored object %s does not decode: %w", kv.Key, err)
	}
	obj.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
	return obj, raw, nil
}

// read fetches one object at the latest revision; store.ErrNotFound when
// absent. Like every helper, it returns store errors as they come (see
// apiError).
func (r *Registry) read(ctx context.Context, k *Kind, ns, name string) (*stored, error) {
	return r.readWith(ctx, r.store.Get, k, ns, name)
}

// readGuard fetches an object that a write will guard with its revision. A
// stale positive answer only makes that write fail and retry, so it skips
// the quorum round of a linearizable read; an answer that accept rejects
// (or NotFound) is confirmed with a linearizable read before the caller
// acts on it, since an etcd member may lag behind.
//
// A version the kind's watch cache holds (it was put recently) is as good
// a stale answer, and costs neither a store read nor a decoding: it is
// taken first, copied, since the cache shares it with its watchers.
func (r *Registry) readGuard(ctx context.Context, k *Kind, ns, name string, accept func(*stored) bool) (*stored, error) {
	if cur, ok := r.cached(k, r.key(k, ns, name)); ok && accept(cur) {
		return cur, nil
	}
	cur, err := r.readWith(ctx, r.store.GetStale, k, ns, name)
	if err == nil && accept(cur) {
		return cur, nil
	}
	return r.read(ctx, k, ns, name)
}

// readForWrite reads the object a write is about to replace, guarded by its
// revision: the first attempt may use a stale read (see readGuard), a retry
// after a lost race reads linearizably.
func (r *Registry) readForWrite(ctx context.Context, k *Kind, ns, name string, attempt int, accept func(*stored) bool) (*stored, error) {
	if attempt > 0 {
		return r.read(ctx, k, ns, name)
	}
	return r.readGuard(ctx, k, ns, name, accept)
}

func (r *Registry) readWith(ctx context.Context, get func(context.Context, string) (*store.KV, error),
	k *Kind, ns, name string) (*stored, error) {
	kv, err := get(ctx, r.key(k, ns, name))
	if err != nil {
		return nil, err
	}
	return r.fromStore(k, kv)
}

// desired returns the canonical JSON of an object's desired state:
// everything but metadata and status. Generation grows when it changes.
func desired(o *api.Object) []byte {
	m := maps.Clone(o.Fields)
	delete(m, api.FieldStatus)
	raw, _ := json.Marshal(m) // a map of RawMessage always marshals
	return raw
}

// sameDesired reports whether a and b desire the same: their fields but
// status equal as JSON values, whatever their key order or spacing (a
// write that records managedFields stores its fields re-encoded, keys
// sorted, and that alone is no change of what is desired).
func sameDesired(a, b *api.Object) bool {
	da, db := desired(a), desired(b)
	if string(da) == string(db) {
		return true
	}
	va, oka := decodeValue(da)
	vb, okb := decodeValue(db)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// decodeValue decodes raw keeping numbers as written (no float rounding
// can make two different numbers equal).
func decodeValue(raw []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	return v, d.Decode(&v) == nil
}

func parseRV(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, api.NewBadRequest("resourceVersion %q is not valid: it must be a resourceVersion returned by the server", rv)
	}
	return n, nil
}
