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

// cacheStatus is the Cache-Control of the status document, which must never
// come from a cache.
const cacheStatus = "no-store"

// handleStatus serves GET /api/v1/status from memory. It answers 200 while
// the process runs, whatever the document says: an outage is reported in
// the body, not by failing.
func handleStatus(src StatusSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseNoQuery(r.URL.RawQuery); err != nil {
			writeError(w, r, err)
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
