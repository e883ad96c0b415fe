package pages

import "html/template"

// feedLink lets browsers and feed readers find the incidents' Atom feed
// from the status page.
const feedLink template.HTML = `<link rel="alternate" type="application/atom+xml" title="cdnapi incidents" href="/api/v1/status/incidents.atom">`
