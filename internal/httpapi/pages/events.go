package pages

import (
	"html/template"

	"github.com/cdnapi/cdnapi"
)

// feedLink lets browsers and feed readers find the incidents' Atom feed
// from the status page.
const feedLink template.HTML = `<link rel="alternate" type="application/atom+xml" title="cdnapi incidents" href="/api/v1/status/incidents.atom">`

// versionMeta names the version of the statuses the page shows, so that
// its script fetches the page again only for another one.
func versionMeta(doc cdnapi.StatusDocument) template.HTML {
	// The version is hex digits: nothing to escape.
	return template.HTML(`<meta name="status-version" content="` + cdnapi.StatusVersion(doc) + `">`)
}
