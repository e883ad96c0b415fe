package httpapi

import (
	"net/http"

	"github.com/cdnapi/cdnapi"
)

// StatusSource provides the status document. The health package's evaluator
// implements it: it evaluates the components in the background and keeps
// the latest document in memory, so Document never blocks on the store.
type StatusSource interface {
	Document() cdnapi.StatusDocument
}

// The Cache-Control of the status document and of the OpenAPI document.
// Status must never come from a cache. The OpenAPI document changes only
// with a deploy, and its ETag makes revalidation after that cheap.
const (
	cacheStatus  = "no-store"
	cacheOpenAPI = "public, max-age=300"
)

// handleStatus serves GET /api/v1/status from memory. It answers 200 while
// the process runs, whatever the document says: an outage is reported in
// the body, not by failing.
func handleStatus(src StatusSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseNoQuery(r.URL.RawQuery); err != nil {
			WriteError(w, r, err)
			return
		}
		buf := getBuffer()
		defer putBuffer(buf)
		*buf = appendStatusDocument(*buf, src.Document())
		*buf = append(*buf, '\n')
		rep := representation{contentType: "application/json", cacheControl: cacheStatus, body: *buf}
		rep.serve(w, r)
	})
}

// handleOpenAPI serves the OpenAPI document as given. Its ETag and gzip
// coding are computed once, here.
func handleOpenAPI(doc []byte) http.Handler {
	rep := &representation{contentType: "application/json", cacheControl: cacheOpenAPI, body: doc}
	rep.precompute()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseNoQuery(r.URL.RawQuery); err != nil {
			WriteError(w, r, err)
			return
		}
		rep.serve(w, r) // serve only reads rep, so requests can share it
	})
}
