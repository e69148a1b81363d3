// Package ui is the dashboard of rtimewheel serve: static HTML, CSS and
// JavaScript embedded in the binary, with uPlot vendored for the charts.
// It reads everything it shows from the /v1 API, with the API token the
// user gives it, so serving the assets themselves needs no authentication
// and no network.
package ui

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// contentSecurityPolicy lets the page load only its own assets and talk
// only to its own server.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// Handler serves the dashboard's assets under prefix (for example "/ui/"):
// prefix itself is the page. Assets are revalidated on every load, so a
// new binary's dashboard shows at once.
func Handler(prefix string) http.Handler {
	root, err := fs.Sub(assets, "assets")
	if err != nil {
		panic("ui: embedded assets missing: " + err.Error()) // a build error, not a run-time one
	}
	files := http.StripPrefix(prefix, http.FileServerFS(root))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
