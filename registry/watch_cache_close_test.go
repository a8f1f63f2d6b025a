package registry_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"cairn.dev/cairn/api"
	"cairn.dev/cairn/registry"
	"cairn.dev/cairn/store"
	"cairn.dev/cairn/store/storetest"
)

func TestWatchCache_SlowStoreDoesNotHoldUpClose(t *testing.T) {
	_, endpoint := storetest.Start(t)
	p := startGateProxy(t, strings.TrimPrefix(endpoint, "unix://"))
	cli, err := store.Dial(context.Background(), []string{"http://" + p.addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	r := startOn(t, store.New(cli), registry.Options{BookmarkInterval: time.Hour})

	p.pause()
	type result struct {
		w   api.Watcher
		err error
	}
	watched := make(chan result, 1)
	go func() { // the kind's first watch: it reads the store's revision
		w, err := r.Watch(sysCtx(), "Secret", "default", api.ListOptions{})
		watched <- result{w, err}
	}()
	select {
	case <-p.held:
	case res := <-watched:
		t.Fatalf("the watch returned (%v) without reading the store", res.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the watch sent nothing to the store")
	}
	closed := make(chan struct{})
	go func() {
		r.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close waits for a watch's store read")
	}
	// The watch ends with ServiceUnavailable, whether Close ended it while
	// its store read was held or the read ended after Close.
	p.resume()
	res := <-watched
	if res.err == nil {
		res.w.Stop()
	}
	if api.ReasonOf(res.err) != api.ReasonUnavailable {
		t.Fatalf("a watch whose store read ended after Close: %v, want ServiceUnavailable", res.err)
	}
}

// gateProxy forwards TCP connections to a target unix socket (the embedded
// etcd's); while paused it holds
// what clients send (and reports, on held, that something was held).
type gateProxy struct {
	ln     net.Listener
	target string
	held   chan struct{}

	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	closed bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startGateProxy(t *testing.T, target string) *gateProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &gateProxy{ln: ln, target: target, held: make(chan struct{}, 1)}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *gateProxy) addr() string { return p.ln.Addr().String() }

func (p *gateProxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = true
}

func (p *gateProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.paused = false
	p.cond.Broadcast()
}

func (p *gateProxy) close() {
	p.mu.Lock()
	p.closed, p.paused = true, false
	p.cond.Broadcast()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *gateProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("unix", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			in.Close()
			out.Close()
			return
		}
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.copy(out, in, true)
		go p.copy(in, out, false)
	}
}

func (p *gateProxy) copy(dst, src net.Conn, gated bool) {
	defer p.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && gated {
			p.mu.Lock()
			if p.paused {
				select {
				case p.held <- struct{}{}:
				default:
				}
			}
			for p.paused {
				p.cond.Wait()
			}
			p.mu.Unlock()
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, or a connection closed
		}
	}
}
