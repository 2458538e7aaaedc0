// Package console serves silt's web console: static HTML, CSS and small
// JavaScript modules embedded in the binary, mounted under /console/ on
// the native API's listener.
//
// The console has no backend of its own. The browser calls the same
// /v1 routes as the CLI with the user's bearer token, so the API's
// authentication and ACL decide everything it shows; this package only
// hands out files. What it adds is the browser's side of safety: a strict
// Content-Security-Policy (no inline script or style, no other origin),
// no framing, no referrer, and revalidated caching so that a new binary's
// files are picked up at once.
package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// Prefix is where the console is mounted on the API listener.
const Prefix = "/console/"

// Config configures the console.
type Config struct {
	Enabled bool `koanf:"enabled" help:"serve the web console at /console/ on the API listener (it calls the API with the user's token; no privileged backend)"`
}

// DefaultConfig returns the embedded defaults: the console is on.
func DefaultConfig() Config { return Config{Enabled: true} }

// Validate reports the first problem with c; every value is valid.
func (c Config) Validate() error { return nil }

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every console response. Scripts
// and styles come only from the console's own files (no inline code, no
// eval), fetches only to the API on the same origin, and no page may
// frame the console (clickjacking a logged-in operator).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type file struct {
	body  []byte
	ctype string
	etag  string
}

// Handler serves the embedded files under Prefix. The files are read and
// hashed once, so each response is a map lookup.
type Handler struct {
	files map[string]file
	mod   time.Time
}

// New returns the console's handler.
func New() (*Handler, error) {
	h := &Handler{files: map[string]file{}}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		// Go's table maps .js to text/javascript; module scripts need a
		// JavaScript type, which that is.
		h.files[strings.TrimPrefix(p, "static/")] = file{body: b, ctype: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("console: embedded files: %w", err)
	}
	if _, ok := h.files["index.html"]; !ok {
		return nil, fmt.Errorf("console: embedded files lack index.html")
	}
	return h, nil
}

// ServeHTTP answers GET and HEAD for the embedded files; "/console/" is
// the index. Anything else under the prefix is 404, and other methods 405:
// the console never takes a body.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", CSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, Prefix)
	if name == "" {
		name = "index.html"
	}
	f, ok := h.files[name]
	if !ok {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	hd.Set("Content-Type", f.ctype)
	// no-cache is "revalidate each time": the ETag makes that a 304, and
	// a server upgraded under an open tab serves its new files at once.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	http.ServeContent(w, r, name, h.mod, bytes.NewReader(f.body))
}
