package server

import (
	"encoding/json"
	"net/http"

	"cairn.dev/cairn/api"
)

// Metadata only: a client that asks with Accept
// "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1" (for a
// list, as=PartialObjectMetadataList) gets each object as a meta.k8s.io/v1
// PartialObjectMetadata: its kind and metadata, nothing else. client-go's
// metadata client asks so, and with it Kubernetes' garbage collector and
// controller-runtime's metadata-only watches: its watches cannot read
// anything else. Reads answer so (a get, a list, every event of a watch,
// BOOKMARKs included); writes answer with the whole object, which the
// metadata client reads too.

// The PartialObjectMetadata forms served.
var (
	partialV1     = mediaOffer{as: "PartialObjectMetadata", g: "meta.k8s.io", v: "v1"}
	partialListV1 = mediaOffer{as: "PartialObjectMetadataList", g: "meta.k8s.io", v: "v1"}
)

// readOffers are the forms a read can answer in.
var readOffers = []mediaOffer{plainJSON, tableV1, tableV1beta1, partialV1, partialListV1}

// wantsPartial reports whether a read asks for PartialObjectMetadata, of
// one object (get, watch) or of a list.
func wantsPartial(r *http.Request, list bool) bool {
	o := negotiate(r, readOffers...)
	if list {
		return o == partialListV1
	}
	return o == partialV1
}

// partialTypeMeta is the type of PartialObjectMetadata items.
var partialTypeMeta = api.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}

// partialObject is the JSON of o as a PartialObjectMetadata.
func partialObject(o *api.Object) ([]byte, error) {
	meta, err := json.Marshal(&o.ObjectMeta)
	if err != nil {
		return nil, err
	}
	b := appendListHead(nil, partialTypeMeta)
	b = append(b, `"metadata":`...)
	b = append(b, meta...)
	return append(b, '}'), nil
}

// writePartial writes o as a PartialObjectMetadata with 200.
func (s *Server) writePartial(w http.ResponseWriter, r *http.Request, o *api.Object) {
	raw, err := partialObject(o)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeAs(w, r, partialV1, json.RawMessage(raw))
}
