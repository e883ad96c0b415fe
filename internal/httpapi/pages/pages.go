// Package pages renders the HTML pages of the API listener for people: the
// overview at /, the status page at /status and the API reference at /docs.
//
// The pages are plain server-rendered HTML and CSS that read well with
// scripts off. They load nothing from elsewhere: each carries its one style
// sheet inline, and the status page one small script that refreshes it, both
// allowed by hash in the page's Content-Security-Policy and by nothing else.
// httpapi serves what this package renders, through its representation
// writer (ETag, 304, gzip).
package pages

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"strings"
)

// Page is a rendered page and the CSP it must be served with.
type Page struct {
	Title string
	Body  []byte
	CSP   string
}

// Addresses are the base URLs of the two public listeners as a reader
// reaches them ("http://127.0.0.1:8080"), which the pages name and link to.
// An empty one is named by the OpenAPI document's default.
type Addresses struct {
	API, Edge string
}

// The OpenAPI document's defaults of its server variables, used for an
// address the server was not told.
const (
	defaultAPI  = "http://127.0.0.1:8080"
	defaultEdge = "http://127.0.0.1:8081"
)

// orDefaults returns a with its empty addresses replaced by the defaults,
// and without a trailing slash.
func (a Addresses) orDefaults() Addresses {
	if a.API == "" {
		a.API = defaultAPI
	}
	if a.Edge == "" {
		a.Edge = defaultEdge
	}
	a.API, a.Edge = strings.TrimSuffix(a.API, "/"), strings.TrimSuffix(a.Edge, "/")
	return a
}

// baseStyle is the part of the style sheet every page shares.
const baseStyle = `:root{color-scheme:light;--fg:#1f2328;--muted:#57606a;--line:#d0d7de;--bg2:#f6f8fa}` +
	`*{box-sizing:border-box}` +
	`body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:#fff;margin:0}` +
	`.wrap{max-width:60rem;margin:0 auto;padding:1rem}` +
	`header.top{border-bottom:1px solid var(--line)}header.top nav{display:flex;gap:1rem;flex-wrap:wrap;align-items:baseline}` +
	`header.top a.home{font-weight:700;font-size:1.2rem;color:var(--fg);text-decoration:none}` +
	`a{color:#0550ae}a:focus-visible,[tabindex]:focus-visible{outline:3px solid #0969da;outline-offset:2px}` +
	`code{font:.875em ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--bg2);padding:.1em .3em;border-radius:4px;overflow-wrap:anywhere}` +
	`h1{font-size:1.6rem;margin:.6em 0}h2{font-size:1.3rem;margin:1.5em 0 .5em}h3{font-size:1.1rem;margin:1.2em 0 .4em}` +
	`table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.35em .6em .35em 0;vertical-align:top;border-bottom:1px solid var(--line)}` +
	`.muted{color:var(--muted)}footer{margin:2rem 0 1rem;color:var(--muted);font-size:.875rem}` +
	`.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:9}`

// csp returns the Content-Security-Policy that allows exactly style and,
// when not empty, script: inline, by hash. connect-src 'self' lets a
// script fetch the page it refreshes.
func csp(style, script string) string {
	p := "default-src 'none'; style-src " + hash(style)
	if script != "" {
		p += "; script-src " + hash(script)
	}
	// connect-src 'self' on every page, scripted or not: a page without a
	// script fetches nothing itself, but the tools that audit it from
	// inside do, such as Lighthouse's check of /robots.txt, which
	// default-src 'none' would block.
	p += "; connect-src 'self'"
	return p + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// layout is the frame of every page. The style and script are passed as
// template.CSS and template.JS so they are written exactly as hashed.
var layout = template.Must(template.New("layout").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<meta name="description" content="{{.Description}}">
<style>{{.Style}}</style>
{{.Head}}</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><nav class="wrap" aria-label="Site"><a class="home" href="/">cdnapi</a><a href="/status">Status</a><a href="/docs">API reference</a><a href="/api/v1/openapi.json">OpenAPI document</a></nav></header>
{{.Main}}
{{if .Script}}<script>{{.Script}}</script>{{end}}
</body>
</html>
`))

// render lays out main with title, description, style and script, and
// returns the page. The description is what search engines and link
// previews show of the page. head, if given, goes at the end of the head
// element (links to feeds).
func render(title, description, style, script string, main template.HTML, head ...template.HTML) Page {
	var b bytes.Buffer
	var h template.HTML
	for _, e := range head {
		h += e + "\n"
	}
	err := layout.Execute(&b, struct {
		Title, Description string
		Style              template.CSS
		Head               template.HTML
		Script             template.JS
		Main               template.HTML
	}{title, description, template.CSS(style), h, template.JS(script), main})
	if err != nil {
		panic("pages: layout: " + err.Error()) // a template bug, found by every test
	}
	return Page{Title: title, Body: b.Bytes(), CSP: csp(style, script)}
}

// execute runs t on data and returns the HTML, panicking on a template bug.
func execute(t *template.Template, data any) template.HTML {
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		panic("pages: " + t.Name() + ": " + err.Error())
	}
	return template.HTML(b.String())
}

var indexMain = template.Must(template.New("index").Parse(`<main id="main" class="wrap">
<h1>cdnapi</h1>
<p>The read API of a content delivery network: the files stored under a project,
the points of presence (regions), the assets they recently served, and the
service's own status. Every endpoint is a read-only <code>GET</code> that returns JSON.</p>
<ul>
<li><a href="/status">Status</a>: is the service up, and what happened lately.</li>
<li><a href="/docs">API reference</a>: every endpoint, parameter, header and error, with an example of each, generated from the contract.</li>
</ul>
<h2>Endpoints</h2>
<p>The service answers on two addresses: this one, the API address <code>{{.API}}</code>,
and the edge address <a href="{{.Edge}}/api/v1/regions"><code>{{.Edge}}</code></a>.</p>
<table>
<caption>On the API address, <code>{{.API}}</code></caption>
<tr><th scope="col">Endpoint</th><th scope="col">Answers with</th></tr>
<tr><td><a href="/api/v1/files"><code>GET /api/v1/files</code></a></td><td>files of the current project, newest first</td></tr>
<tr><td><a href="/api/v1/status"><code>GET /api/v1/status</code></a></td><td>the service status and its components</td></tr>
<tr><td><a href="/api/v1/status/incidents"><code>GET /api/v1/status/incidents</code></a></td><td>incidents, newest first</td></tr>
<tr><td><a href="/api/v1/status/uptime"><code>GET /api/v1/status/uptime</code></a></td><td>uptime of each component over 30 and 90 days</td></tr>
{{if .Feed}}<tr><td><a href="/api/v1/status/incidents.atom"><code>GET /api/v1/status/incidents.atom</code></a></td><td>incidents as an Atom feed, for feed readers</td></tr>
{{end}}<tr><td><a href="/api/v1/openapi.json"><code>GET /api/v1/openapi.json</code></a></td><td>the OpenAPI 3.1 document</td></tr>
</table>
<table>
<caption>On the edge address, <code>{{.Edge}}</code></caption>
<tr><th scope="col">Endpoint</th><th scope="col">Answers with</th></tr>
<tr><td><a href="{{.Edge}}/api/v1/regions"><code>GET /api/v1/regions</code></a></td><td>points of presence and their state</td></tr>
<tr><td><a href="{{.Edge}}/api/v1/assets"><code>GET /api/v1/assets</code></a></td><td>recently requested assets and their cache status</td></tr>
</table>
</main>
`))

// indexStyle adds the captions of the endpoint tables to the base style.
const indexStyle = baseStyle + `caption{text-align:left;font-weight:600;padding:1rem 0 .35rem}`

// Index returns the overview page at /, naming the addresses a. With feed,
// it links the incidents' Atom feed, in its head for feed readers and in
// its list of endpoints for people.
func Index(a Addresses, feed bool) Page {
	var head []template.HTML
	if feed {
		head = append(head, feedLink)
	}
	return render("cdnapi", "The read API of a content delivery network: its endpoints on the API and edge addresses, "+
		"with links to the service status and the API reference.", indexStyle, "",
		execute(indexMain, struct {
			Addresses
			Feed bool
		}{a.orDefaults(), feed}), head...)
}
