package console_test

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"cairn.dev/cairn/internal/testkit"
	"cairn.dev/cairn/internal/testkit/browsertest"
)

// cutter is a TCP proxy on loopback in front of the server whose
// connections a test can cut, as a network failure does.
type cutter struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutter(t *testing.T, target string) *cutter {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{l: l}
	t.Cleanup(func() { l.Close(); c.cut() })
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns = append(c.conns, in, out)
			c.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return c
}

// cut closes every connection through the proxy.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.conns {
		n.Close()
	}
	c.conns = nil
}

// TestConsole_DroppedWatchResumesFromItsLastResourceVersion cuts the
// connections of a list page: the page says it is reconnecting, watches
// again from the resourceVersion of the last change it saw (no new
// list), and shows the change made while it was cut.
func TestConsole_DroppedWatchResumesFromItsLastResourceVersion(t *testing.T) {
	f := setup(t)
	ns := f.namespace(t, "resume")
	u, _ := url.Parse(f.url)
	proxy := newCutter(t, u.Host)
	f.apply(t, "apiVersion: cairn.dev/v1alpha1\nkind: DataObject\nmetadata: {name: first, namespace: "+ns+"}\ndata: {a: 1}\n")
	tab := browsertest.Tab(t, f.browser)
	base := "http://" + proxy.l.Addr().String()
	run(t, tab, chromedp.Navigate(base+"/ui/list/dataobjects?ns="+ns), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), f.d.Token()), chromedp.Click(chromedp.CSS("#signin button[type=submit]")))
	waitText(t, tab, ".vlist", "first")
	// Record the page's requests from here on.
	run(t, tab, chromedp.Evaluate[chromedp.Void](`(() => { window.__urls = []; const f = window.fetch;
		window.fetch = (u, o) => { window.__urls.push(String(u)); return f(u, o); }; })()`))
	f.apply(t, "apiVersion: cairn.dev/v1alpha1\nkind: DataObject\nmetadata: {name: second, namespace: "+ns+"}\ndata: {a: 2}\n")
	waitText(t, tab, ".vlist", "second")
	second, err := f.c.Get(testkit.Context(t), "DataObject", ns, "second")
	if err != nil {
		t.Fatal(err)
	}
	// Cut, and keep cutting while a change is written, so that the change
	// can only arrive by the resumed watch.
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
				proxy.cut()
			}
		}
	}()
	waitText(t, tab, "#connection", "reconnecting")
	f.apply(t, "apiVersion: cairn.dev/v1alpha1\nkind: DataObject\nmetadata: {name: third, namespace: "+ns+"}\ndata: {a: 3}\n")
	close(done)
	waitText(t, tab, ".vlist", "third")
	urls, err := eval[[]string](tab, "window.__urls")
	if err != nil {
		t.Fatal(err)
	}
	resumed := false
	for _, s := range urls {
		if !strings.Contains(s, "watch=true") && strings.Contains(s, "/dataobjects") {
			t.Errorf("the page listed again (%s) instead of resuming its watch", s)
		}
		resumed = resumed || strings.Contains(s, "resourceVersion="+second.ResourceVersion)
	}
	if !resumed {
		t.Fatalf("no watch resumed from resourceVersion %s (the last change seen); requests: %s", second.ResourceVersion, strings.Join(urls, "\n"))
	}
	testkit.EventuallyNil(t, 10*time.Second, "the banner to go", func() error {
		hidden, err := eval[bool](tab, "document.getElementById('connection').hidden")
		if err != nil || !hidden {
			return fmt.Errorf("banner still shown (%v)", err)
		}
		return nil
	})
}
