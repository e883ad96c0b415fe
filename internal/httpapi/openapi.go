package httpapi

import "net/http"

// cacheOpenAPI is the Cache-Control of the OpenAPI document. It changes only
// with a deploy, and its ETag makes revalidation after that cheap.
const cacheOpenAPI = "public, max-age=300"

// handleOpenAPI serves the OpenAPI document as given. Its ETag and gzip
// coding are computed once, here.
func handleOpenAPI(doc []byte) http.Handler {
	rep := &representation{contentType: "application/json", cacheControl: cacheOpenAPI, body: doc}
	rep.precompute()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := parseNoQuery(r.URL.RawQuery); err != nil {
			writeError(w, r, err)
			return
		}
		rep.serve(w, r) // serve only reads rep, so requests can share it
	})
}
