package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"cairn.dev/cairn/api"
)

// ErrUnreachable matches (with errors.Is) every *UnreachableError.
var ErrUnreachable = errors.New("cairn server unreachable")

// UnreachableError reports that no cairn server answered at URL: nothing
// listens there, the connection broke, or the name does not resolve.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the cairn server at %s: %v (is `cairn server` running?)", e.URL, e.Err)
}

// Unwrap returns the transport error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// ErrWatchClosed is the Err of an HTTP watch whose stream the server ended
// without an ERROR event (the server shut down or a proxy cut it). Watch
// again from the last resourceVersion seen.
var ErrWatchClosed = errors.New("client: the server closed the watch stream")

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 1 << 20

// decodeError turns a non-2xx response into an *api.Status. A body that is
// not a Status (a proxy's page, say) becomes a Status whose reason follows
// the HTTP code. A 401 gets a message naming the token's source.
func (c *httpClient) decodeError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var st api.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Reason == "" {
		text := strings.TrimSpace(string(body))
		if len(text) > 200 {
			text = text[:200] + "..."
		}
		msg := fmt.Sprintf("the server answered %s", resp.Status)
		if text != "" {
			msg += ": " + text
		}
		st = api.Status{Reason: reasonForCode(resp.StatusCode), Message: msg}
	}
	if st.Code == 0 {
		st.Code = resp.StatusCode
	}
	if st.Reason == api.ReasonUnauthorized {
		st.Message = c.unauthorizedMessage(st.Message)
	}
	return &st
}

func (c *httpClient) unauthorizedMessage(serverMsg string) string {
	if c.token == "" {
		return fmt.Sprintf("the cairn server at %s requires a token and none is configured: "+
			"pass --token, set %s, or use the config file `cairn server` writes (%s) (server said: %s)",
			c.base, EnvToken, DefaultConfigPath(), serverMsg)
	}
	src := c.tokenSource
	if src == "" {
		src = "the client configuration"
	}
	return fmt.Sprintf("the cairn server at %s rejected the token from %s (server said: %s)",
		c.base, src, serverMsg)
}

// reasonForCode is the reverse of api.Reason.Code for bodies that carry no
// Status.
func reasonForCode(code int) api.Reason {
	switch code {
	case http.StatusNotFound:
		return api.ReasonNotFound
	case http.StatusConflict:
		return api.ReasonConflict
	case http.StatusUnprocessableEntity:
		return api.ReasonInvalid
	case http.StatusBadRequest:
		return api.ReasonBadRequest
	case http.StatusUnauthorized:
		return api.ReasonUnauthorized
	case http.StatusForbidden:
		return api.ReasonForbidden
	case http.StatusGone:
		return api.ReasonExpired
	case http.StatusTooManyRequests:
		return api.ReasonTooManyRequests
	case http.StatusRequestEntityTooLarge:
		return api.ReasonTooLarge
	case http.StatusMethodNotAllowed:
		return api.ReasonMethodNotAllowed
	case http.StatusUnsupportedMediaType:
		return api.ReasonUnsupportedMedia
	case http.StatusServiceUnavailable:
		return api.ReasonUnavailable
	case http.StatusGatewayTimeout:
		return api.ReasonTimeout
	case http.StatusRequestTimeout:
		return api.ReasonRequestTimeout
	case http.StatusInsufficientStorage:
		return api.ReasonInsufficientStorage
	default:
		return api.ReasonInternalError
	}
}
