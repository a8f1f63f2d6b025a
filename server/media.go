package server

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"
)

// mediaOffer is a form of JSON answer a client can ask for with Accept:
// "application/json" with the parameters as (the kind of answer), g and v
// (its group and version), as Kubernetes negotiates Tables and aggregated
// discovery. The zero offer is plain JSON.
type mediaOffer struct {
	as, g, v string
}

// String is the offer's media type, as sent in Content-Type.
func (o mediaOffer) String() string {
	if o == (mediaOffer{}) {
		return "application/json"
	}
	return "application/json;as=" + o.as + ";g=" + o.g + ";v=" + o.v
}

// negotiate returns the first offer the request's Accept header names, in
// the header's order (its q-values are not weighed: clients list their
// preferences first), or offers[0] when the header names none of them
// (or is absent). A range of another type, or with an "as" no offer has,
// is skipped, as Kubernetes skips it.
func negotiate(r *http.Request, offers ...mediaOffer) mediaOffer {
	for _, rng := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(rng))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json", "application/*", "*/*":
		default:
			continue
		}
		want := mediaOffer{as: params["as"], g: params["g"], v: params["v"]}
		for _, o := range offers {
			if o == want || (want.as == "" && o == (mediaOffer{})) {
				return o
			}
		}
	}
	return offers[0]
}

// writeAs writes v as JSON with 200 and the offer's Content-Type.
func (s *Server) writeAs(w http.ResponseWriter, r *http.Request, o mediaOffer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", o.String())
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Vary", "Accept")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(b, '\n'))
}
