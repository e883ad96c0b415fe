package pages

import (
	"cmp"
	"crypto/sha256"
	"html/template"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The API reference at /docs is generated from the OpenAPI document when the
// server starts, so it cannot drift from the contract: every operation on
// both addresses, with its parameters and their limits, its responses with
// their headers and fields, every schema, error code and example.

// docsView is the reference, arranged for the template.
type docsView struct {
	Title, Version string
	Intro          template.HTML
	Servers        []serverView
	Operations     []operationView
	Responses      []namedView
	Schemas        []namedView
}

// serverView is a server variable of the document: its default, and the
// address it has on the server that renders the page.
type serverView struct{ Variable, Default, Here, Description string }

type operationView struct {
	Anchor, Method, Path, Address string
	Summary                       string
	Description                   template.HTML
	Public                        bool       // no credentials needed when auth is on
	Also                          []alsoView // HEAD and OPTIONS
	Parameters                    []paramView
	Responses                     []responseView
	Example                       exampleView
	tag                           string
}

// alsoView is the HEAD or OPTIONS of an operation's path.
type alsoView struct {
	Anchor, Method, Summary string
	Example                 exampleView
}

type paramView struct {
	Name, In    string
	Required    bool
	Description template.HTML
	Schema      *fieldView
}

type responseView struct {
	Status, Component string // Component: the anchor of the shared response
	Description       string
}

// namedView is a component (a response or a schema) shown once and linked
// to from the operations.
type namedView struct {
	Anchor, Name string
	Description  template.HTML
	Headers      []headerView
	Media        string
	Schema       *fieldView
}

type headerView struct {
	Name, Description string
	Required          bool
	Schema            *fieldView
}

// fieldView is a schema, or a field of one: its type, its constraints, and
// its fields, items or alternatives.
type fieldView struct {
	Name        string
	Required    bool
	Type        string
	Link        string // anchor of a named schema this is
	Constraints []string
	Description string
	Fields      []*fieldView
	Items       *fieldView
	AllOf       []*fieldView
	OneOf       []*fieldView
}

var docsCache sync.Map // sha256 of the document and the addresses → Page

// MustDocs returns the reference generated from the OpenAPI document in
// JSON, naming the addresses a, once per document and addresses. It panics
// on a document it cannot read, which the embedded one is tested not to be.
func MustDocs(openapiJSON []byte, a Addresses) Page {
	h := sha256.New()
	h.Write(openapiJSON)
	h.Write([]byte("\x00" + a.API + "\x00" + a.Edge))
	key := string(h.Sum(nil))
	if p, ok := docsCache.Load(key); ok {
		return p.(Page)
	}
	p, err := Docs(openapiJSON, a)
	if err != nil {
		panic(err)
	}
	docsCache.Store(key, p)
	return p
}

// Docs generates the reference from the OpenAPI document in JSON, with its
// examples on the addresses a.
func Docs(openapiJSON []byte, a Addresses) (Page, error) {
	root, err := parseNode(openapiJSON)
	if err != nil {
		return Page{}, err
	}
	a = a.orDefaults()
	v := docsView{Title: root.str("info", "title"), Version: root.str("info", "version"),
		Intro: markdown(root.str("info", "description"))}
	// The server variables of the document and of its paths, each once.
	servers := root.get("servers").itemsOf()
	for _, path := range root.get("paths").keysOf() {
		servers = append(servers, root.get("paths", path, "servers").itemsOf()...)
	}
	for _, s := range servers {
		for _, name := range s.get("variables").keysOf() {
			if !slices.ContainsFunc(v.Servers, func(sv serverView) bool { return sv.Variable == name }) {
				v.Servers = append(v.Servers, serverView{name, s.str("variables", name, "default"),
					a.of(name), s.str("description")})
			}
		}
	}
	paths := root.get("paths")
	for _, path := range paths.keysOf() {
		item := paths.fields[path]
		address, base := "API address", a.API
		if srv := item.get("servers"); srv != nil {
			var names []string
			for _, s := range srv.itemsOf() {
				names = append(names, strings.Trim(s.str("url"), "{}"))
			}
			address, base = addressOf(names), a.of(names[0])
		}
		op := item.get("get")
		if op == nil {
			continue
		}
		ov := operationView{Anchor: op.str("operationId"), Method: "GET", Path: path, Address: address,
			Summary: op.str("summary"), Description: markdown(op.str("description"))}
		if sec := op.get("security"); sec != nil && len(sec.items) == 0 {
			ov.Public = true
		}
		reqURL := base + path + root.exampleQuery(op)
		ov.Example = root.getExample(op, reqURL)
		for _, m := range []string{"head", "options"} {
			if o := item.get(m); o != nil {
				ov.Also = append(ov.Also, alsoView{o.str("operationId"), strings.ToUpper(m), o.str("summary"),
					root.otherExample(m, o, reqURL)})
			}
		}
		for _, p := range op.get("parameters").itemsOf() {
			p, _ = root.resolve(p)
			ov.Parameters = append(ov.Parameters, paramView{Name: p.str("name"), In: p.str("in"),
				Required: p.get("required").text() == "true", Description: markdown(p.str("description")),
				Schema: root.field(p.get("schema"), 0)})
		}
		responses := op.get("responses")
		for _, status := range responses.keysOf() {
			r, name := root.resolve(responses.fields[status])
			ov.Responses = append(ov.Responses, responseView{Status: status, Component: "response-" + name,
				Description: firstSentence(r.str("description"))})
		}
		ov.tag = op.get("tags").itemsOf()[0].text()
		v.Operations = append(v.Operations, ov)
	}
	// The JSON document's keys are sorted; the order of its tags is the
	// order of the contract (files, regions, assets, status, meta).
	var tags []string
	for _, tag := range root.get("tags").itemsOf() {
		tags = append(tags, tag.str("name"))
	}
	slices.SortStableFunc(v.Operations, func(a, b operationView) int {
		return cmp.Compare(slices.Index(tags, a.tag), slices.Index(tags, b.tag))
	})
	responses := root.get("components", "responses")
	for _, name := range responses.keysOf() {
		r := responses.fields[name]
		nv := namedView{Anchor: "response-" + name, Name: name, Description: markdown(r.str("description"))}
		headers := r.get("headers")
		for _, h := range headers.keysOf() {
			hv, _ := root.resolve(headers.fields[h])
			nv.Headers = append(nv.Headers, headerView{Name: h, Description: hv.str("description"),
				Required: hv.get("required").text() == "true", Schema: root.field(hv.get("schema"), 0)})
		}
		content := r.get("content")
		for _, media := range content.keysOf() {
			nv.Media = media
			nv.Schema = root.field(content.fields[media].get("schema"), 0)
		}
		v.Responses = append(v.Responses, nv)
	}
	schemas := root.get("components", "schemas")
	for _, name := range schemas.keysOf() {
		s := schemas.fields[name]
		f := root.expand(s, 0)
		v.Schemas = append(v.Schemas, namedView{Anchor: "schema-" + name, Name: name, Schema: f})
	}
	return render(v.Title+" reference", "The "+v.Title+" reference, generated from its OpenAPI document: "+
		"every operation on the API and edge addresses with an example request and answer, its parameters, "+
		"responses, headers, error codes and schemas.", docsStyle, "", execute(docsMain, v)), nil
}

// of returns the address of a server variable of the document.
func (a Addresses) of(variable string) string {
	if variable == "edge_url" {
		return a.Edge
	}
	return a.API
}

// exampleQuery returns the query of the example request of op: every
// parameter whose schema has an example, with it; "" for none.
func (root *node) exampleQuery(op *node) string {
	q := url.Values{}
	var names []string
	for _, p := range op.get("parameters").itemsOf() {
		p, _ = root.resolve(p)
		s, _ := root.resolve(p.get("schema"))
		if p.str("in") != "query" || s == nil {
			continue
		}
		if ex := s.get("examples"); ex != nil && len(ex.items) > 0 {
			names = append(names, p.str("name"))
			q.Set(p.str("name"), ex.items[0].text())
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// getExample returns the example of a GET operation: a request of url, and
// the JSON body of its 200 answer built from the answer's schema. An answer
// in another media type (the Atom feed, the event stream) shows its
// schema's own example; a stream, which never ends, is requested with
// curl -N, so that curl shows each event as it comes.
func (root *node) getExample(op *node, reqURL string) exampleView {
	ex := exampleView{Request: "curl -s '" + reqURL + "'", Status: "200"}
	r, _ := root.resolve(op.get("responses", "200"))
	if s := r.get("content", "application/json", "schema"); s != nil {
		ex.Body = root.example(s, slot{}, 0).indentJSON()
		return ex
	}
	content := r.get("content")
	for _, media := range content.keysOf() {
		if media == "text/event-stream" {
			ex.Request = "curl -sN '" + reqURL + "'"
		}
		if s, _ := root.resolve(content.fields[media].get("schema")); s != nil {
			if examples := s.get("examples"); examples != nil && len(examples.items) > 0 {
				ex.Body = examples.items[0].text()
			}
		}
	}
	return ex
}

// otherExample returns the example of the HEAD or OPTIONS operation o of a
// path whose GET example requests url: the answer has no body.
func (root *node) otherExample(method string, o *node, reqURL string) exampleView {
	status := "200"
	for _, s := range o.get("responses").keysOf() {
		if strings.HasPrefix(s, "2") {
			status = s
			break
		}
	}
	if method == "head" {
		return exampleView{Request: "curl -sI '" + reqURL + "'", Status: status, Note: "the headers of GET, and no body"}
	}
	return exampleView{Request: "curl -si -X OPTIONS '" + reqURL + "' -H 'Origin: https://app.example' " +
		"-H 'Access-Control-Request-Method: GET'", Status: status, Note: "the Access-Control-Allow-* headers, and no body"}
}

// addressOf names the addresses of a path's servers.
func addressOf(vars []string) string {
	var names []string
	for _, v := range vars {
		switch v {
		case "base_url":
			names = append(names, "API address")
		case "edge_url":
			names = append(names, "edge address")
		default:
			names = append(names, v)
		}
	}
	return strings.Join(names, " and ")
}

// field describes schema s: a reference to a named schema is a link to it;
// anything else is expanded.
func (root *node) field(s *node, depth int) *fieldView {
	if s == nil {
		return nil
	}
	if ref := s.str("$ref"); strings.HasPrefix(ref, "#/components/schemas/") {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		return &fieldView{Type: name, Link: "schema-" + name}
	}
	return root.expand(s, depth)
}

// expand describes schema s with its constraints, fields, items and
// alternatives.
func (root *node) expand(s *node, depth int) *fieldView {
	f := &fieldView{Description: s.str("description")}
	if depth > 8 {
		return f
	}
	if t := s.get("type"); t != nil {
		f.Type = strings.ReplaceAll(t.text(), ", ", " or ")
	}
	for _, c := range constraintKeys {
		if v := s.get(c.key); v != nil {
			f.Constraints = append(f.Constraints, c.label+" "+v.text())
		}
	}
	if ap := s.get("additionalProperties"); ap != nil && ap.text() == "false" {
		f.Constraints = append(f.Constraints, "no other fields")
	}
	required := map[string]bool{}
	for _, r := range s.get("required").itemsOf() {
		required[r.text()] = true
	}
	// The JSON document's keys are sorted; required lists the fields in
	// the order of the contract, and the optional ones follow.
	props := s.get("properties")
	names := slices.Clone(props.keysOf())
	slices.SortStableFunc(names, func(a, b string) int {
		return cmp.Compare(fieldRank(s, a), fieldRank(s, b))
	})
	for _, name := range names {
		sub := root.field(props.fields[name], depth+1)
		sub.Name, sub.Required = name, required[name]
		f.Fields = append(f.Fields, sub)
	}
	f.Items = root.field(s.get("items"), depth+1)
	for _, a := range s.get("allOf").itemsOf() {
		f.AllOf = append(f.AllOf, root.field(a, depth+1))
	}
	for _, a := range s.get("oneOf").itemsOf() {
		f.OneOf = append(f.OneOf, root.field(a, depth+1))
	}
	for i, p := range s.get("prefixItems").itemsOf() {
		sub := root.field(p, depth+1)
		sub.Name = "item " + string(rune('1'+i))
		f.Fields = append(f.Fields, sub)
	}
	return f
}

// fieldRank is the place of a field in the required list of s, or after
// every required field.
func fieldRank(s *node, name string) int {
	for i, r := range s.get("required").itemsOf() {
		if r.text() == name {
			return i
		}
	}
	return 1 << 20
}

// constraintKeys are the schema keywords shown as constraints, in order.
var constraintKeys = []struct{ key, label string }{
	{"const", "always"}, {"enum", "one of:"}, {"format", "format"}, {"pattern", "pattern"},
	{"minimum", "minimum"}, {"maximum", "maximum"}, {"minLength", "min length"}, {"maxLength", "max length"},
	{"minItems", "min items"}, {"maxItems", "max items"}, {"default", "default"}, {"examples", "example:"},
}

func (n *node) keysOf() []string {
	if n == nil {
		return nil
	}
	return n.keys
}

func (n *node) itemsOf() []*node {
	if n == nil {
		return nil
	}
	return n.items
}

var (
	inlineCode = regexp.MustCompile("`([^`]+)`")
	mdHeading  = regexp.MustCompile(`^(#{1,4}) (.*)$`)
)

// markdown renders the little Markdown the document uses: paragraphs,
// headings, "- " lists and `code`. Everything is escaped first.
func markdown(s string) template.HTML {
	var b strings.Builder
	inline := func(t string) string {
		return inlineCode.ReplaceAllString(template.HTMLEscapeString(t), "<code>$1</code>")
	}
	for _, block := range strings.Split(strings.TrimSpace(s), "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if m := mdHeading.FindStringSubmatch(lines[0]); m != nil {
			b.WriteString("<h3>" + inline(m[2]) + "</h3>\n")
			lines = lines[1:]
		}
		if len(lines) == 0 {
			continue
		}
		if strings.HasPrefix(lines[0], "- ") {
			b.WriteString("<ul>")
			for _, l := range strings.Split(strings.Join(lines, "\n"), "\n- ") {
				b.WriteString("<li>" + inline(strings.TrimPrefix(l, "- ")) + "</li>")
			}
			b.WriteString("</ul>\n")
			continue
		}
		b.WriteString("<p>" + inline(strings.Join(lines, "\n")) + "</p>\n")
	}
	return template.HTML(b.String())
}

// firstSentence shortens a description for the table of an operation; the
// shared response below has it whole.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i > 0 {
		return s[:i+1]
	}
	return s
}
