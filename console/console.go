// Package console serves cairn's web console: a single-page application of
// plain ES modules and CSS, embedded in the binary (no build step, no Node).
// The console is a client like any other: the page asks for a bearer token,
// keeps it in the browser's session storage, and talks to the public REST
// and watch API with it. This package serves only the static assets, which
// hold no data, so they need no token.
//
// Every path under Prefix that is not an asset answers with the page
// itself, so that an object's stable URL, /ui/namespaces/NS/PLURAL/NAME,
// can be pasted and opened directly. Every answer carries strict headers
// (Headers): a Content-Security-Policy that allows scripts, styles and
// connections from the server's own origin only (no inline script, no
// eval, no frames), X-Frame-Options DENY and Referrer-Policy no-referrer.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
)

// Prefix is the path the console is served under.
const Prefix = "/ui/"

// ContentSecurityPolicy is the policy of every console answer: everything
// from the server's own origin only, no inline script or style, no eval,
// never framed, forms posted nowhere.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed assets
var assets embed.FS

// Serves reports whether the console answers path p: /ui and everything
// under /ui/.
func Serves(p string) bool {
	return p == strings.TrimSuffix(Prefix, "/") || strings.HasPrefix(p, Prefix)
}

// Handler returns the handler of every path Serves reports. GET and HEAD
// only (405 otherwise); /ui redirects to /ui/; an asset is served with its
// content type; any other path gets the page (index.html), which routes
// in the browser. It never blocks beyond writing the answer. The handler
// is built once and shared (it holds nothing that changes).
func Handler() http.Handler { return handler() }

var handler = sync.OnceValue(newHandler)

func newHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	files := http.FileServerFS(sub)
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Headers(w.Header())
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the console serves GET and HEAD only", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		name := strings.TrimPrefix(path.Clean(r.URL.Path), Prefix)
		if isAsset(sub, name) {
			w.Header().Set("Cache-Control", "no-cache")
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + name
			files.ServeHTTP(w, r2)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(index)
		}
	})
}

// isAsset reports whether name is a file of the embedded assets other
// than the page itself (which every non-asset path serves).
func isAsset(fsys fs.FS, name string) bool {
	if name == "" || name == "." || name == "index.html" {
		return false
	}
	st, err := fs.Stat(fsys, name)
	return err == nil && !st.IsDir()
}

// Headers sets the console's security headers on h.
func Headers(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}
