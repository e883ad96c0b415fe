package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
)

// The human pages of the API listener: what the service is, its endpoints,
// and where the machine-readable contract is. They are static, load nothing
// from elsewhere, and carry a CSP that allows exactly their one inline style
// sheet, by hash.

const pageStyle = `body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}` +
	`code{font:14px ui-monospace,monospace;background:#f2f2f4;padding:.1em .3em;border-radius:3px}` +
	`table{border-collapse:collapse}td,th{text-align:left;padding:.3em .8em .3em 0;vertical-align:top}`

// pageCSP allows the inline style sheet and nothing else: no scripts, no
// frames, no forms, no embedding of the page elsewhere.
var pageCSP = func() string {
	sum := sha256.Sum256([]byte(pageStyle))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

// cachePages is the Cache-Control of the human pages.
const cachePages = "public, max-age=300"

const pageHead = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{title}}</title>
<style>` + pageStyle + `</style>
</head>
<body>
`

const indexBody = `<h1>cdnapi</h1>
<p>The read API of a content delivery network: the files stored under a project,
the points of presence (regions), the assets they recently served, and the
service's own status. Every endpoint is a read-only <code>GET</code> that returns JSON.</p>
<h2>Endpoints</h2>
<table>
<tr><th>On this address</th><td></td></tr>
<tr><td><a href="/api/v1/files"><code>GET /api/v1/files</code></a></td><td>files of the current project, newest first</td></tr>
<tr><td><a href="/api/v1/status"><code>GET /api/v1/status</code></a></td><td>the service status and its components</td></tr>
<tr><td><a href="/api/v1/openapi.json"><code>GET /api/v1/openapi.json</code></a></td><td>the OpenAPI 3.1 document</td></tr>
<tr><th>On the edge address</th><td></td></tr>
<tr><td><code>GET /api/v1/regions</code></td><td>points of presence and their state</td></tr>
<tr><td><code>GET /api/v1/assets</code></td><td>recently requested assets and their cache status</td></tr>
</table>
<p>The <a href="/docs">documentation</a> explains paging, caching and errors.
The <a href="/api/v1/openapi.json">OpenAPI document</a> is the contract.</p>
</body>
</html>
`

const docsBody = `<h1>cdnapi documentation</h1>
<p>The <a href="/api/v1/openapi.json">OpenAPI 3.1 document</a> describes every
parameter, header and error exactly. This page is the short version.</p>
<h2>Lists</h2>
<p>Files, regions and assets answer with
<code>{"object":"list","data":[…],"has_more":…,"next_cursor":…}</code>.
Files and assets come newest first and take <code>limit</code> (1 to 100, default 20)
and <code>cursor</code>; assets also take <code>region</code>, a code such as
<code>FRA1</code>. When <code>has_more</code> is true, pass <code>next_cursor</code> as
<code>cursor</code>, or follow the <code>Link</code> header with <code>rel="next"</code>,
to get the next page. Cursors belong to the list and filter they came from,
never expire, and stay correct while new rows arrive.</p>
<h2>Caching</h2>
<p>Every answer carries a strong <code>ETag</code>; send it back in
<code>If-None-Match</code> to get <code>304 Not Modified</code>. Files and assets may be
cached for 60 seconds, regions for 300; the status is never cached.
Answers over 1 KiB are gzip-coded when the client accepts it.</p>
<h2>Errors</h2>
<p>Errors answer with
<code>{"error":{"type":…,"code":…,"message":…,"param":…,"request_id":…}}</code>.
The code says what went wrong (for example <code>parameter_invalid</code>,
<code>cursor_invalid</code>, <code>region_unknown</code>, <code>not_found</code>),
the message says what to change, and the request ID, also in the
<code>X-Request-Id</code> header, identifies the request in our logs.
A <code>503</code> carries <code>Retry-After</code>.</p>
<p><a href="/">Back to the overview</a>.</p>
</body>
</html>
`

// handlePage serves a static HTML page with the given title and body. Its
// ETag and gzip coding are computed once, here. Query strings are ignored:
// the pages are for people, and links from elsewhere carry all sorts.
func handlePage(title, body string) http.Handler {
	rep := &representation{
		contentType:  "text/html; charset=utf-8",
		cacheControl: cachePages,
		csp:          pageCSP,
		body:         []byte(strings.Replace(pageHead, "{{title}}", title, 1) + body),
	}
	rep.precompute()
	return http.HandlerFunc(rep.serve)
}
