package registry

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/authz"
	"cairn.dev/cairn/registry/internal/watchcache"
	"cairn.dev/cairn/store"
)

// How a list reads the store: page by page, each page bounded by count and
// (approximately) by bytes, so that a list's memory does not grow with the
// collection.
const (
	// listChunk is the most keys one store read returns.
	listChunk = 500
	// listFirstChunk is how many keys the first store read of a list asks
	// for when no list of the kind has been read yet.
	listFirstChunk = 4
	// listPageBytes is about how many bytes of stored values one store read
	// returns: each read asks for as many keys as fit (at least one), at
	// the size of the largest value of the previous read, or, for a list's
	// first read, of the last read of any list of the kind.
	listPageBytes = 512 << 10
	// listWholeScale is how many times larger (in keys and in bytes) the
	// pages of a list collected whole are (see ListReader.fetch).
	listWholeScale = 16
)

// continueToken is the opaque position of the next page.
type continueToken struct {
	Rev  int64  `json:"rev"`
	From string `json:"from"`
}

// List returns the objects of a kind in namespace ns (every namespace when
// ns is ""), in name order, filtered by opts.LabelSelector and paged by
// opts.Limit and opts.Continue. Every page of one list is read at the same
// store revision, given as the list's resourceVersion.
//
// It returns the whole list (or page, with a limit) at once, for
// in-process callers; callers that pass the objects on one at a time (the
// HTTP server) use OpenList, whose reader List drains. It blocks on the
// store reads of OpenList and ListReader.Next.
//
// Errors: Unauthorized, Forbidden, BadRequest (negative limit, bad
// selector or continue token), Gone (the continue token's revision has
// been compacted: list again), ServiceUnavailable, Timeout.
func (r *Registry) List(ctx context.Context, kind, ns string, opts api.ListOptions) (*api.List, error) {
	k, _, err := r.admit(ctx, kind, authz.Attributes{Verb: authz.VerbList, Namespace: ns})
	if err != nil {
		return nil, err
	}
	return r.list(ctx, k, ns, opts)
}

// OpenList starts reading the list that List returns, for a caller that
// takes its objects one at a time (ListReader.Next), so that the list's
// memory stays bounded by a page of the store however large the
// collection. It authorizes the caller and reads the first page of the
// store (which fixes the list's resourceVersion) before it returns, so
// every error of a list that does not come from a later store read comes
// from OpenList. It blocks on that read.
//
// Errors: as List.
func (r *Registry) OpenList(ctx context.Context, kind, ns string, opts api.ListOptions) (*ListReader, error) {
	k, _, err := r.admit(ctx, kind, authz.Attributes{Verb: authz.VerbList, Namespace: ns})
	if err != nil {
		return nil, err
	}
	return r.openList(ctx, k, ns, opts, false)
}

// openList is OpenList without authorization; whole tells that the list
// is collected whole (see ListReader.fetch).
func (r *Registry) openList(ctx context.Context, k *Kind, ns string, opts api.ListOptions, whole bool) (*ListReader, error) {
	if opts.Limit < 0 {
		return nil, api.NewBadRequest("limit must not be negative, got %d", opts.Limit)
	}
	sel, err := selection(opts)
	if err != nil {
		return nil, err
	}
	at, err := listRevision(opts)
	if err != nil {
		return nil, err
	}
	prefix := r.key(k, narrow(k, ns, sel), "")
	pos := continueToken{From: prefix, Rev: at}
	if opts.Continue != "" {
		if pos, err = decodeContinue(opts.Continue, prefix); err != nil {
			return nil, err
		}
	}
	hint, _ := r.listHints.LoadOrStore(k.Kind, new(atomic.Int64))
	lr := &ListReader{r: r, k: k, sel: sel, prefix: prefix, limit: opts.Limit, pos: pos, more: true,
		hint: hint.(*atomic.Int64), whole: whole}
	lr.largest = lr.hint.Load()
	if err := lr.fetch(ctx); err != nil {
		return nil, err
	}
	if rv, _ := parseRV(opts.ResourceVersion); rv > lr.pos.Rev {
		return nil, api.NewStatus(api.ReasonTimeout, "resourceVersion %d is newer than the store (at %d): list again with a resourceVersion the server returned", rv, lr.pos.Rev)
	}
	return lr, nil
}

// listRevision is the store revision a list with opts is read at: the
// resourceVersion with ResourceVersionMatch Exact, else 0 (the latest,
// which is never older than a NotOlderThan version: openList checks).
// Errors: BadRequest for an unknown match, a match without a version, a
// version that is not one, or a match with a continue token (whose
// revision decides).
func listRevision(opts api.ListOptions) (int64, error) {
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return 0, err
	}
	switch opts.ResourceVersionMatch {
	case "":
		return 0, nil
	case "NotOlderThan", "Exact":
	default:
		return 0, api.NewBadRequest("resourceVersionMatch must be NotOlderThan or Exact, not %q", opts.ResourceVersionMatch)
	}
	switch {
	case opts.ResourceVersion == "":
		return 0, api.NewBadRequest("resourceVersionMatch needs a resourceVersion")
	case opts.Continue != "":
		return 0, api.NewBadRequest("resourceVersionMatch cannot be used with a continue token: the token names its version")
	case opts.ResourceVersionMatch == "Exact" && rv == 0:
		return 0, api.NewBadRequest("resourceVersionMatch Exact needs a resourceVersion other than 0")
	case opts.ResourceVersionMatch == "Exact":
		return rv, nil
	}
	return 0, nil
}

// list is List without authorization.
func (r *Registry) list(ctx context.Context, k *Kind, ns string, opts api.ListOptions) (*api.List, error) {
	lr, err := r.openList(ctx, k, ns, opts, true)
	if err != nil {
		return nil, err
	}
	return lr.collect(ctx)
}

// ListReader reads one list (see OpenList) page by page. It holds at most
// one page of the store, about 512 KiB of stored values (one object when
// objects are larger), sized from the largest value of the page before;
// a page of objects much larger than those before it can hold more (a
// list List collects whole, which its caller holds anyway, reads pages 16
// times larger). It is not safe for concurrent use.
type ListReader struct {
	r      *Registry
	k      *Kind
	sel    watchcache.Selection
	prefix string
	limit  int64
	pos    continueToken // the revision of every page; From: the next key to read
	page   []*store.KV   // the unread rest of the page last read
	// decoded holds the objects of page, decoded ahead (a list collected
	// whole decodes each page on every core: see fetch), aligned with it;
	// nil when each is decoded as Next reaches it.
	decoded []decodedKV
	more    bool // the store holds keys after the page last read
	// largest is the size of the largest value of the page last read,
	// which sizes the next; hint is the kind's, shared with every list.
	largest int64
	hint    *atomic.Int64
	count   int64 // objects returned
	// whole is set for a list collected whole (List), whose memory is
	// the list's anyway: its pages are listWholeScale times larger.
	whole bool
	cont  string // the continue token, once the limit is reached
	done  bool
	err   error // the error that ended the reader
}

// Kind is the list's kind: the kind's name + "List" ("SecretList").
func (l *ListReader) Kind() string { return api.ListKind(l.k.Kind) }

// ResourceVersion is the list's resourceVersion: the store revision every
// page is read at. It is known once OpenList has returned.
func (l *ListReader) ResourceVersion() string { return formatRV(l.pos.Rev) }

// Continue is the token of the next page when the list was limited and
// more objects may follow; "" otherwise. It is known once Next has
// returned io.EOF.
func (l *ListReader) Continue() string { return l.cont }

// Next returns the list's next object, in name order, or io.EOF after the
// last one. The object is the caller's. It blocks on a store read when the
// page it holds is used up. A failure ends the reader: Next returns the
// same error from then on.
//
// Errors: Gone (the list's revision has been compacted since the first
// page: list again), ServiceUnavailable, Timeout, InternalError (a stored
// object does not decode).
func (l *ListReader) Next(ctx context.Context) (*api.Object, error) {
	for {
		switch {
		case l.err != nil:
			return nil, l.err
		case l.done:
			return nil, io.EOF
		case len(l.page) == 0:
			if !l.more {
				l.done = true
				continue
			}
			if err := l.fetch(ctx); err != nil {
				return nil, err
			}
			continue
		}
		kv := l.page[0]
		l.page[0] = nil // let the value go as soon as its object has
		l.page = l.page[1:]
		var ahead *decodedKV
		if len(l.decoded) > 0 {
			ahead = &l.decoded[0]
			l.decoded = l.decoded[1:]
		}
		if l.limit > 0 && l.count == l.limit {
			l.cont = encodeContinue(continueToken{Rev: l.pos.Rev, From: kv.Key})
			l.done, l.page, l.decoded = true, nil, nil
			continue
		}
		var obj *api.Object
		var err error
		if ahead != nil {
			obj, err = ahead.obj, ahead.err
		} else {
			obj, err = l.r.decode(l.k, kv)
		}
		if err != nil {
			l.err = apiError(err, l.k.Kind, "")
			return nil, l.err
		}
		l.pos.From = kv.Key + "\x00"
		if l.sel.Matches(obj) {
			l.count++
			return obj, nil
		}
	}
}

// fetch reads the next page of the store, as many keys as fit in
// listPageBytes at the size of the previous page's largest value (at most
// listChunk; listFirstChunk when nothing is known), both bounds
// listWholeScale times larger for a list collected whole; without a
// selector, no more than the limit needs plus one, which tells whether a
// next page exists.
//
// Larger pages matter to the store more than to the reader: etcd counts
// every key left in the range at each limited read, so a list of n keys
// read in pages of p costs it about n²/2p key visits.
func (l *ListReader) fetch(ctx context.Context) error {
	chunk := int64(listFirstChunk)
	if l.largest > 0 {
		scale := int64(1)
		if l.whole {
			scale = listWholeScale
		}
		chunk = min(max(scale*listPageBytes/l.largest, 1), scale*listChunk)
	}
	if l.limit > 0 && l.sel.Empty() {
		chunk = min(chunk, l.limit-l.count+1)
	}
	page, err := l.r.store.List(ctx, l.prefix, store.ListOptions{Revision: l.pos.Rev, From: l.pos.From, Limit: chunk})
	if err != nil {
		l.err = apiError(err, l.k.Kind, "")
		return l.err
	}
	l.pos.Rev = page.Revision
	l.page, l.more, l.largest, l.decoded = page.KVs, page.More, 0, nil
	for _, kv := range page.KVs {
		l.largest = max(l.largest, int64(len(kv.Value)))
	}
	if l.whole && len(page.KVs) >= 2*minDecodeShare {
		l.decoded = l.r.decodeAll(l.k, page.KVs)
	}
	if l.largest > 0 {
		l.hint.Store(l.largest)
	}
	return nil
}

// decodedKV is a stored value decoded: its object, or why it does not
// decode.
type decodedKV struct {
	obj *api.Object
	err error
}

// minDecodeShare is the fewest values a goroutine of decodeAll decodes.
const minDecodeShare = 256

// decodeAll decodes kvs on every core (a page of a list collected whole:
// JSON decoding is most of such a list's cost), in order.
func (r *Registry) decodeAll(k *Kind, kvs []*store.KV) []decodedKV {
	out := make([]decodedKV, len(kvs))
	n := min(runtime.GOMAXPROCS(0), len(kvs)/minDecodeShare)
	var wg sync.WaitGroup
	share := (len(kvs) + n - 1) / n
	for from := 0; from < len(kvs); from += share {
		to := min(from+share, len(kvs))
		wg.Go(func() {
			for i := from; i < to; i++ {
				out[i].obj, out[i].err = r.decode(k, kvs[i])
			}
		})
	}
	wg.Wait()
	return out
}

// collect reads the rest of the list into an api.List.
func (l *ListReader) collect(ctx context.Context) (*api.List, error) {
	list := &api.List{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: l.Kind()},
		ListMeta: api.ListMeta{ResourceVersion: l.ResourceVersion()}, Items: []*api.Object{}}
	for {
		obj, err := l.Next(ctx)
		if errors.Is(err, io.EOF) {
			list.Continue = l.Continue()
			return list, nil
		}
		if err != nil {
			return nil, err
		}
		list.Items = append(list.Items, obj)
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
