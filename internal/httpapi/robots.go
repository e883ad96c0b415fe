package httpapi

import "net/http"

// robotsTxt is /robots.txt of the API listener. The pages (/, /status,
// /docs) are for people and may be indexed; the API under /api/ is for
// programs, and a crawler following the cursors of every list would page
// through the store. Feed readers do not read robots.txt, so the Atom feed
// of incidents is still read by those who subscribe to it.
const robotsTxt = `# cdnapi: the pages are for people and search engines, /api/ is for programs.
User-agent: *
Disallow: /api/
`

// handleRobots serves robotsTxt, as text, cached like the static pages.
func handleRobots() http.Handler {
	rep := &representation{contentType: "text/plain; charset=utf-8", cacheControl: cachePages, body: []byte(robotsTxt)}
	rep.precompute()
	return http.HandlerFunc(rep.serve) // serve only reads rep, so requests can share it
}
