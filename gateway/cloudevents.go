package gateway

import (
	"bytes"
	"crypto/subtle"
	"net/http"
	"strings"

	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"cairn.dev/cairn/api"
)

// VerifyBearer checks the Authorization header of a CloudEvents delivery
// against the Gateway's token, in constant time. Its errors never hold
// either token. Errors: Unauthorized (missing, not Bearer, wrong).
func VerifyBearer(token []byte, header string) error {
	scheme, got, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return api.NewStatus(api.ReasonUnauthorized, "the delivery has no bearer token: send "+
			"\"Authorization: Bearer <token>\" with the token the Gateway's secretRef holds")
	}
	if len(token) == 0 || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), token) != 1 {
		return api.NewStatus(api.ReasonUnauthorized, "the bearer token is not the Gateway's")
	}
	return nil
}

// MapCloudEvent reads a CloudEvents 1.0 HTTP delivery, in binary mode
// (ce-* headers, the body as data) or structured mode (Content-Type
// application/cloudevents+json), and maps it to an Event's fields: its
// source and type as the Event's, its subject as the title, its data as
// the payload. It also answers the delivery's identity (source and id),
// unique per event by the specification. It is a pure function.
// Errors: BadRequest when the request is not a valid CloudEvent (naming
// what is missing or wrong).
func MapCloudEvent(header http.Header, body []byte) (Delivery, string, error) {
	req := &http.Request{Method: http.MethodPost, Header: header, Body: http.NoBody}
	if len(body) > 0 {
		req.Body = readCloser{bytes.NewReader(body)}
		req.ContentLength = int64(len(body))
	}
	e, err := cehttp.NewEventFromHTTPRequest(req)
	if err != nil {
		return Delivery{}, "", api.NewBadRequest("the delivery is not a CloudEvent: %v; send CloudEvents 1.0 "+
			"in binary mode (ce-specversion, ce-id, ce-source, ce-type headers) or structured mode "+
			"(Content-Type: application/cloudevents+json)", err)
	}
	if err := e.Validate(); err != nil {
		return Delivery{}, "", api.NewBadRequest("the CloudEvent is not valid: %v", err)
	}
	d := Delivery{Source: e.Source(), Type: e.Type(), Title: truncate(e.Subject(), 256), Payload: string(e.Data())}
	return d, e.Source() + "\x00" + e.ID(), nil
}

// readCloser is a reader with a Close that does nothing.
type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
