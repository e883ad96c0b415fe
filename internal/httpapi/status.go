package httpapi

import (
	"net/http"

	"github.com/cdnapi/cdnapi"
)

// StatusSource provides the status document. The health package's evaluator
// implements it: it evaluates the components in the background and keeps
// the latest document in memory, so Document never blocks on the store.
// Changed returns a channel closed at the next publication of a document,
// which the status streams wait on; take it before calling Document.
type StatusSource interface {
	Document() cdnapi.StatusDocument
	Changed() <-chan struct{}
}

// notDeployedSource is a StatusSource that also knows which components
// the deployment does not have (health.Evaluator), so that the status page
// can say "not deployed here" rather than "under maintenance" of them.
type notDeployedSource interface {
	NotDeployed() []string
}

// cacheStatus is the Cache-Control of the status document, which must never
// come from a cache.
const cacheStatus = "no-store"

// statusRequest parses requests of GET /api/v1/status, served from memory.
// It answers 200 while the process runs, whatever the document says: an
// outage is reported in the body, not by failing. The page cache's key is
// the document itself, so an answer is never staler than the document,
// and a crowd asking for the same document costs one ETag and one gzip
// coding per TTL rather than one each.
func statusRequest(src StatusSource) parseList {
	return func(r *http.Request) (listRequest, error) {
		if err := parseNoQuery(r.URL.RawQuery); err != nil {
			return listRequest{}, err
		}
		body := appendStatusDocument(make([]byte, 0, 1024), src.Document())
		body = append(body, '\n')
		return listRequest{key: "status " + string(body), render: func(*http.Request) (*representation, error) {
			return &representation{contentType: "application/json", cacheControl: cacheStatus, body: body}, nil
		}}, nil
	}
}
