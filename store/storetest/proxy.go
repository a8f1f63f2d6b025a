package storetest

import (
	"io"
	"net"
	"sync"
)

// proxy relays TCP connections from a fixed loopback address to a
// member's client listener, so that killing the member can cut its
// clients' connections at once, as the death of its process would (an
// embedded etcd stopped in process keeps its gRPC connections open for
// seconds while it drains them).
type proxy struct {
	addr   string // where clients connect
	target string // the member's client listener

	mu    sync.Mutex
	l     net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// open starts accepting on p.addr.
func (p *proxy) open() error {
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.l = l
	if p.conns == nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.relay(c)
		}
	}()
	return nil
}

// relay copies c to a new connection to the target and back, until
// either side closes or the proxy is cut.
func (p *proxy) relay(c net.Conn) {
	t, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.l == nil {
		p.mu.Unlock()
		c.Close()
		t.Close()
		return
	}
	p.conns[c], p.conns[t] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := func() {
		c.Close()
		t.Close()
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, t)
		p.mu.Unlock()
	}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		defer done()
		_, _ = io.Copy(t, c)
	}()
	go func() {
		defer p.wg.Done()
		defer done()
		_, _ = io.Copy(c, t)
	}()
}

// cut stops accepting and resets every relayed connection; it waits for
// the relays to end.
func (p *proxy) cut() {
	p.mu.Lock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, as a dead process's
		}
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
