package pages

import (
	"html/template"
	"strings"
	"unicode"
)

const docsStyle = baseStyle +
	`.layout{display:grid;grid-template-columns:15rem minmax(0,1fr);gap:2rem;max-width:80rem;margin:0 auto;padding:1rem}` +
	`.layout>h1{grid-column:1/-1;grid-row:1;margin-bottom:0}main{grid-column:2;grid-row:2}.toc{grid-column:1;grid-row:2;position:sticky;top:0;align-self:start;max-height:100vh;overflow:auto;font-size:.875rem;padding-top:1rem}` +
	`.toc ul{list-style:none;padding:0;margin:0 0 1rem}.toc li{margin:.2rem 0}` +
	`@media (max-width:50rem){.layout{grid-template-columns:minmax(0,1fr);gap:1rem}.layout>h1,main,.toc{grid-column:1;grid-row:auto}.toc{position:static;max-height:none;padding-top:0}}` +
	`.op{border:1px solid var(--line);border-radius:8px;padding:0 1rem 1rem;margin:1.5rem 0}` +
	`.op h3{display:flex;gap:.5rem;flex-wrap:wrap;align-items:baseline}.m{font:700 .8rem ui-monospace,monospace;background:#ddf4ff;color:#0550ae;padding:.1rem .4rem;border-radius:4px}` +
	`.addr{font-size:.8rem;color:var(--muted)}dl.f{margin:.25rem 0 .25rem .5rem;padding-left:.75rem;border-left:2px solid var(--line)}` +
	`dl.f dt{font-family:ui-monospace,monospace;font-size:.875rem;margin-top:.4rem;overflow-wrap:anywhere}dl.f dd{margin:0}` +
	`.req{color:#cf222e;font-size:.75rem}.ty{color:#8250df;font-size:.8rem}.c{font-size:.8rem;color:var(--muted);overflow-wrap:anywhere}` +
	`.scroll{overflow-x:auto}.scroll td:last-child{overflow-wrap:anywhere}` +
	// Examples wrap rather than scroll: a long URL or checksum breaks
	// anywhere, which is no loss in a sample.
	`pre.ex{background:var(--bg2);border:1px solid var(--line);border-radius:6px;padding:.5rem .75rem;margin:.25rem 0 .75rem;` +
	`font:.8rem/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;white-space:pre-wrap;overflow-wrap:anywhere}` +
	`pre.ex code{background:none;padding:0;font-size:1em}` +
	// On a narrow screen the contents come first, before the reference, in
	// two columns so that they do not push it far down.
	`@media (max-width:50rem){.toc ul.cols{columns:2;column-gap:1rem}.toc li{break-inside:avoid}}` +
	// A name breaks between its words only where the screen is too narrow.
	`@media (min-width:50.01rem){.scroll td:nth-child(2){white-space:nowrap}}`

// camel writes a component name so that a narrow column breaks it between
// its words, never inside one: "Files<wbr>Not<wbr>Modified".
func camel(name string) template.HTML {
	var b strings.Builder
	for i, r := range name {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteString("<wbr>")
		}
		b.WriteString(template.HTMLEscapeString(string(r)))
	}
	return template.HTML(b.String())
}

var docsMain = template.Must(template.New("docs").Funcs(template.FuncMap{"camel": camel}).Parse(`{{define "field"}}{{if .Link}}<a class="ty" href="#{{.Link}}">{{.Type}}</a>{{else}}{{if .Type}}<span class="ty">{{.Type}}</span>{{end}}{{end}}
{{range .Constraints}} <span class="c">{{.}}</span>{{end}}{{if .Description}}<br>{{.Description}}{{end}}
{{if .Fields}}<dl class="f">{{range .Fields}}<dt>{{.Name}}{{if .Required}} <span class="req">required</span>{{end}}</dt><dd>{{template "field" .}}</dd>{{end}}</dl>{{end}}
{{if .Items}}<dl class="f"><dt>items</dt><dd>{{template "field" .Items}}</dd></dl>{{end}}
{{if .AllOf}}<dl class="f"><dt>all of</dt>{{range .AllOf}}<dd>{{template "field" .}}</dd>{{end}}</dl>{{end}}
{{if .OneOf}}<dl class="f"><dt>one of</dt>{{range .OneOf}}<dd>{{template "field" .}}</dd>{{end}}</dl>{{end}}
{{end}}{{define "example"}}<pre class="ex"><code>{{.Request}}</code></pre>
{{if .Body}}<p class="c">answers {{.Status}} with</p>
<pre class="ex"><code>{{.Body}}</code></pre>{{else}}<p class="c">answers {{.Status}} with {{.Note}}.</p>{{end}}
{{end}}<div class="layout">
<h1>{{.Title}} <span class="muted">{{.Version}}</span></h1>
<nav class="toc" aria-label="Reference">
<h2>Contents</h2>
<ul><li><a href="#overview">Overview</a></li></ul>
<h3>Operations</h3>
<ul>{{range .Operations}}<li><a href="#{{.Anchor}}">{{.Method}} {{.Path}}</a></li>{{end}}</ul>
<h3>Responses</h3>
<ul class="cols">{{range .Responses}}<li><a href="#{{.Anchor}}">{{camel .Name}}</a></li>{{end}}</ul>
<h3>Schemas</h3>
<ul class="cols">{{range .Schemas}}<li><a href="#{{.Anchor}}">{{camel .Name}}</a></li>{{end}}</ul>
</nav>
<main id="main">
<p>Generated from the <a href="/api/v1/openapi.json">OpenAPI document</a>, the contract every answer is tested against.
The examples are made from it too, for the addresses of this server.</p>
<section id="overview" aria-labelledby="h-overview"><h2 id="h-overview">Overview</h2>
{{.Intro}}
<h3>Servers</h3>
<div class="scroll"><table><tr><th scope="col">Variable</th><th scope="col">On this server</th><th scope="col">Default</th><th scope="col">What</th></tr>
{{range .Servers}}<tr><td><code>{{.Variable}}</code></td><td><code>{{.Here}}</code></td><td><code>{{.Default}}</code></td><td>{{.Description}}</td></tr>{{end}}
</table></div></section>
<section aria-labelledby="h-ops"><h2 id="h-ops">Operations</h2>
{{range .Operations}}<article class="op" id="{{.Anchor}}">
<h3><span class="m">{{.Method}}</span> <code>{{.Path}}</code> <span class="addr">on the {{.Address}}{{if .Public}}, public{{end}}</span></h3>
<p>{{.Summary}}</p>{{.Description}}
{{if .Parameters}}<h4>Query parameters</h4><dl class="f">{{range .Parameters}}<dt>{{.Name}}{{if .Required}} <span class="req">required</span>{{end}} <span class="c">in {{.In}}</span></dt><dd>{{.Description}}{{with .Schema}}{{template "field" .}}{{end}}</dd>{{end}}</dl>
{{else}}<p class="c">Takes no query parameters.</p>{{end}}
<h4>Responses</h4><div class="scroll"><table><tr><th scope="col">Status</th><th scope="col">Response</th><th scope="col">What</th></tr>
{{range .Responses}}<tr><td>{{.Status}}</td><td><a href="#{{.Component}}">{{camel (slice .Component 9)}}</a></td><td>{{.Description}}</td></tr>{{end}}
</table></div>
<h4>Example</h4>
{{template "example" .Example}}
{{range .Also}}<div id="{{.Anchor}}"><h4><span class="m">{{.Method}}</span> {{.Summary}}</h4>
{{template "example" .Example}}</div>
{{end}}</article>
{{end}}</section>
<section aria-labelledby="h-responses"><h2 id="h-responses">Responses</h2>
{{range .Responses}}<article id="{{.Anchor}}"><h3>{{camel .Name}}</h3>{{.Description}}
{{if .Headers}}<h4>Headers</h4><dl class="f">{{range .Headers}}<dt>{{.Name}}{{if .Required}} <span class="req">required</span>{{end}}</dt><dd>{{.Description}}{{with .Schema}} {{template "field" .}}{{end}}</dd>{{end}}</dl>{{end}}
{{if .Media}}<h4>Body <span class="c">{{.Media}}</span></h4>{{with .Schema}}{{template "field" .}}{{end}}{{else}}<p class="c">No body.</p>{{end}}
</article>
{{end}}</section>
<section aria-labelledby="h-schemas"><h2 id="h-schemas">Schemas</h2>
{{range .Schemas}}<article id="{{.Anchor}}"><h3>{{camel .Name}}</h3>{{with .Schema}}{{template "field" .}}{{end}}</article>
{{end}}</section>
</main>
</div>
`))
