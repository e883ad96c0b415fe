package httpapi

import (
	"net/http"
	"slices"
	"strings"
)

// The CORS headers of API.md. The exposed headers include those of the
// authentication and rate-limit issue, so browsers can read them once they
// appear.
const (
	corsAllowMethods  = "GET, HEAD"
	corsAllowHeaders  = "Authorization, If-None-Match"
	corsExposeHeaders = "ETag, Link, X-Request-Id, RateLimit, RateLimit-Policy, Retry-After"
	// corsMaxAge is how long browsers may cache a preflight, in seconds.
	// Chromium caps it at two hours, so asking for more buys nothing.
	corsMaxAge = "7200"
)

// corsPolicy decides which origins may read the public listeners' answers
// from a browser.
type corsPolicy struct {
	anyOrigin bool     // "*" was configured: answer every origin alike
	origins   []string // otherwise, the origins allowed, e.g. "https://app.example"
}

// newCORSPolicy returns the policy for the configured origins. Blank
// entries, as a split of an empty flag gives, are ignored; no origins left,
// or "*" among them, allows every origin.
func newCORSPolicy(origins []string) *corsPolicy {
	var allowed []string
	for _, o := range origins {
		if o = strings.TrimSpace(o); o != "" {
			allowed = append(allowed, o)
		}
	}
	if len(allowed) == 0 || slices.Contains(allowed, "*") {
		return &corsPolicy{anyOrigin: true}
	}
	return &corsPolicy{origins: allowed}
}

// setHeaders sets the CORS headers of an actual (not preflight) answer. With
// a list of origins the answer depends on the Origin header, so it says so
// with Vary: Origin whether or not this origin matched: a cache must not
// hand one origin's answer to another.
func (p *corsPolicy) setHeaders(h http.Header, r *http.Request) {
	if p.anyOrigin {
		h["Access-Control-Allow-Origin"] = corsAnyOriginValue
	} else {
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin == "" || !slices.Contains(p.origins, origin) {
			return
		}
		h.Set("Access-Control-Allow-Origin", origin)
	}
	h["Access-Control-Expose-Headers"] = corsExposeValue
}

// preflight answers an OPTIONS request with 204 and what the browser needs to
// go ahead: the methods and request headers allowed, and how long it may
// remember that. The origin headers were set by setHeaders; a browser whose
// origin is not allowed finds no Access-Control-Allow-Origin and stops.
func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Allow", "GET, HEAD, OPTIONS")
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	h.Del("Access-Control-Expose-Headers") // meaningful on actual answers only
	w.WriteHeader(http.StatusNoContent)
}
