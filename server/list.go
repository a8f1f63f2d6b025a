package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"cairn.dev/cairn/api"
)

// serveList writes a list as the registry reads it, page by page: each
// object is encoded and written as it comes, so that neither the list nor
// its encoding is ever held whole, whatever the collection's size.
//
// The JSON is the list's, as json.Marshal of an api.List would give it.
// Without a limit, the metadata (the resourceVersion, known from the first
// page) comes before the items, byte for byte as an api.List marshals.
// With a limit, whether a continue token is due is known only after the
// page's last item, so the metadata (resourceVersion and continue) comes
// after the items: the same JSON object, its keys in another order.
//
// Errors before the first byte (authorization, a bad continue token, the
// first store read) are answered as usual. A store failure after the
// status line has been sent cannot be: the response is cut short (the
// connection is aborted before the list's closing brackets), so the
// client's decoding fails rather than taking a partial list for a whole
// one, and the failure is logged.
//
// A request for a Table (table.go) gets one, streamed the same way, its
// metadata always after its rows; one for PartialObjectMetadata
// (partial.go) a PartialObjectMetadataList.
func (s *Server) serveList(w *statusWriter, r *http.Request, rt *route, opts api.ListOptions) {
	ctx := r.Context()
	tbl, err := tableFor(r, rt)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	lr, err := s.reg.OpenList(ctx, rt.kind.Kind, rt.ns, opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	metaFirst := opts.Limit == 0 && tbl == nil
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	encode := marshalItem
	listType := api.TypeMeta{APIVersion: api.APIVersion, Kind: lr.Kind()}
	var b []byte
	switch {
	case tbl != nil:
		h.Set("Content-Type", tbl.offer.String())
		encode, b = tbl.row, tbl.head()
	case wantsPartial(r, true):
		h.Set("Content-Type", partialListV1.String())
		encode, listType = partialObject, api.TypeMeta{APIVersion: partialTypeMeta.APIVersion, Kind: partialListV1.as}
	}
	w.WriteHeader(http.StatusOK)

	if tbl == nil {
		b = appendListHead(nil, listType)
	}
	if metaFirst {
		b = appendListMeta(b, api.ListMeta{ResourceVersion: lr.ResourceVersion()})
		b = append(b, ',')
	}
	if tbl == nil {
		b = append(b, `"items":[`...)
	}
	for n := 0; ; n++ {
		obj, err := lr.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.abortList(r, err)
		}
		raw, err := encode(obj)
		if err != nil {
			s.abortList(r, err)
		}
		if n > 0 {
			b = append(b, ',')
		}
		if _, err := w.Write(b); err != nil {
			return // the client is gone, or stopped reading past the write timeout
		}
		if _, err := w.Write(raw); err != nil {
			return
		}
		b = b[:0]
	}
	b = append(b, ']')
	if !metaFirst {
		b = append(b, ',')
		b = appendListMeta(b, api.ListMeta{ResourceVersion: lr.ResourceVersion(), Continue: lr.Continue()})
	}
	_, _ = w.Write(append(b, "}\n"...))
}

// abortList ends a list response whose status line has been sent, after a
// failure: the connection is aborted, so the client sees a truncated body.
func (s *Server) abortList(r *http.Request, err error) {
	if r.Context().Err() == nil {
		s.log.Error("list failed after its first page; response cut short", "method", r.Method,
			"path", r.URL.Path, "err", api.LogValue(err))
	}
	panic(http.ErrAbortHandler)
}

// marshalItem returns json.Marshal(obj), without json.Marshal's two
// copies of the object's encoding (its own buffer, and the copy it
// returns) when it can: json.Marshal only checks and compacts what
// obj.MarshalJSON writes, and escapes <, >, & and the line separators
// U+2028 and U+2029; objects read from the store hold none of them
// unescaped (they were stored as json.Marshal wrote them), so their
// MarshalJSON output is json.Marshal's already.
func marshalItem(obj *api.Object) ([]byte, error) {
	raw, err := obj.MarshalJSON()
	if err != nil || bytes.ContainsAny(raw, "<>&\u2028\u2029") {
		return json.Marshal(obj)
	}
	return raw, nil
}

// appendListHead appends the opening of a list's JSON object and its type
// fields: `{"apiVersion":...,"kind":...,`.
func appendListHead(b []byte, tm api.TypeMeta) []byte {
	raw, _ := json.Marshal(tm) // strings always marshal
	b = append(b, raw[:len(raw)-1]...)
	if len(raw) > 2 {
		b = append(b, ',')
	}
	return b
}

// appendListMeta appends `"metadata":{...}`.
func appendListMeta(b []byte, m api.ListMeta) []byte {
	raw, _ := json.Marshal(m) // strings always marshal
	b = append(b, `"metadata":`...)
	return append(b, raw...)
}
