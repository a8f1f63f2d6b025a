package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/identity"
	"cairn.dev/cairn/logsource"
)

// ForwardLogs opens the logs at path (an Event's or DeployItem's logs
// endpoint) at the process leading the controllers, for the caller in
// ctx, as trace requests are forwarded (forwardTrace: a cairn peer proven
// by its certificate, the caller asserted, no token sent on); the answer
// streams for as long as the leader sends it (a followed log). It
// implements logsource.Forwarder. It blocks until the leader answers.
// Errors: logsource.ErrNotForwarded when this server leads the
// controllers itself or keeps no traces (no leader to ask), or ctx serves
// a forwarded request; ServiceUnavailable when no process leads or the
// leader cannot be reached or proven; the leader's refusal as an
// *api.Status.
func (s *Server) ForwardLogs(ctx context.Context, path string, query url.Values) (io.ReadCloser, error) {
	src := s.opts.Traces
	if src == nil || api.Forwarded(ctx) {
		return nil, logsource.ErrNotForwarded
	}
	if _, leading := src.Trace("", "", ""); leading {
		return nil, logsource.ErrNotForwarded
	}
	leader, err := src.Leader(ctx)
	if err != nil {
		return nil, err
	}
	if leader == "" {
		return nil, unavailable("no process leads the controllers now, and the output of running units is theirs: " +
			"start `cairn server` with controllers or a `cairn controller-manager`")
	}
	if err := s.checkPeerAddress(leader); err != nil {
		return nil, err
	}
	u := strings.TrimSuffix(leader, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, unavailable(fmt.Sprintf("the controllers' leader has an unusable address %q", leader))
	}
	caller, _ := identity.From(ctx)
	req.Header.Set(identity.PeerHeader, identity.EncodeHeader(caller))
	req.Header.Set(ForwardedHeader, "1")
	resp, err := s.streamForwarder.Do(req)
	if err != nil {
		s.log.Warn("cannot forward a logs request to the controllers' leader", "leader", leader, "err", err)
		return nil, peerRefusal(leader, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.Body, nil
	}
	defer resp.Body.Close()
	var st api.Status
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(body, &st) != nil || st.Reason == "" {
		return nil, unavailable(fmt.Sprintf("the controllers' leader at %s answered %d", leader, resp.StatusCode))
	}
	st.Code = resp.StatusCode
	return nil, &st
}

// streamClient is the client of forwarded logs requests: client's, with
// no overall timeout (a followed log streams until its unit ends); nil for
// a nil Peer.
func (p *Peer) streamClient() *http.Client {
	c := p.client()
	if c != nil {
		c.Timeout = 0
	}
	return c
}
