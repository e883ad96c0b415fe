package pages

import (
	"encoding/json"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
)

// The examples of /docs are made from the OpenAPI document, like the rest of
// the reference, so that they cannot drift from it: a request of each
// operation, as a curl command on the address that serves it, and the body
// of its success, built from the response's schema. A value is the schema's
// first example, const or enum value where it has one; otherwise one is made
// up to fit its type and pattern. cmd/cdnapi's tests run every example
// request against a real server and compare the answer with the example.

// exampleView is the example of one operation.
type exampleView struct {
	Request string // a curl command
	Status  string // the status of the answer, "200"
	Body    string // the answer's body, indented JSON; "" for none
	Note    string // what else the answer carries, for answers without a body
}

// maxExampleDepth bounds the recursion through schemas that refer to
// themselves, which the document has none of today.
const maxExampleDepth = 12

// slot is the place of a value in an array of n items; n is 0 outside
// such arrays. See exampleArray.
type slot struct{ i, n int }

// example returns a value that schema s describes, as a node, for the place
// at.
func (root *node) example(s *node, at slot, depth int) *node {
	if s == nil || depth > maxExampleDepth {
		return &node{}
	}
	if r, _ := root.resolve(s); r != nil && r != s {
		return root.example(r, at, depth+1)
	}
	if ex := s.get("examples"); ex != nil && len(ex.items) > 0 {
		return ex.items[0]
	}
	if ex := s.get("example"); ex != nil {
		return ex
	}
	if c := s.get("const"); c != nil {
		return c
	}
	if e := s.get("enum"); e != nil && len(e.items) > 0 {
		if at.n > 1 && len(e.items) == at.n {
			return e.items[at.i]
		}
		return e.items[0]
	}
	v := root.ofType(s, at, depth)
	// allOf adds to the value, or decides it; of oneOf and anyOf the first
	// alternative is the example.
	for _, sub := range s.get("allOf").itemsOf() {
		v = merge(v, root.example(sub, at, depth+1))
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if alts := s.get(key).itemsOf(); len(alts) > 0 {
			v = merge(v, root.example(alts[0], at, depth+1))
		}
	}
	return v
}

// ofType returns a value of the schema's own type, without its allOf and
// oneOf: of a list of types the first that is not null; nil for none.
func (root *node) ofType(s *node, at slot, depth int) *node {
	t := s.get("type")
	typ := t.text()
	if t != nil && t.array {
		typ = ""
		for _, it := range t.items {
			if it.text() != "null" {
				typ = it.text()
				break
			}
		}
	}
	if typ == "" && s.get("properties") != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		return root.exampleObject(s, at, depth)
	case "array":
		return root.exampleArray(s, depth)
	case "string":
		if s.str("format") == "date-time" {
			return &node{value: "2026-11-20T14:03:07Z"}
		}
		if p := s.str("pattern"); p != "" {
			return &node{value: fromPattern(p)}
		}
		return &node{value: "string"}
	case "integer", "number":
		if m := s.get("minimum"); m != nil {
			return m
		}
		return &node{value: json.Number("0")}
	case "boolean":
		return &node{value: false}
	}
	return &node{}
}

// exampleObject returns an object with every property of s, the required ones
// first in the order of required, and an empty object for each required
// member that s names but does not describe.
func (root *node) exampleObject(s *node, at slot, depth int) *node {
	o := &node{object: true, fields: map[string]*node{}}
	props := s.get("properties")
	names := slices.Clone(props.keysOf())
	slices.SortStableFunc(names, func(a, b string) int { return fieldRank(s, a) - fieldRank(s, b) })
	for _, name := range names {
		o.keys = append(o.keys, name)
		o.fields[name] = root.example(props.fields[name], at, depth+1)
	}
	for _, r := range s.get("required").itemsOf() {
		if name := r.text(); o.fields[name] == nil {
			o.keys = append(o.keys, name)
			o.fields[name] = &node{object: true, fields: map[string]*node{}}
		}
	}
	return o
}

// exampleArray returns an array of one item, or of minItems items. An array that
// must hold as many items as an enum of its items has values, such as the
// four components of the status, lists each value once, in order.
func (root *node) exampleArray(s *node, depth int) *node {
	a := &node{array: true}
	n := 1
	if m := s.get("minItems"); m != nil {
		if v, err := m.value.(json.Number).Int64(); err == nil && v > 1 {
			n = int(v)
		}
	}
	prefix := s.get("prefixItems").itemsOf()
	n = max(n, len(prefix))
	for i := range n {
		it := root.example(s.get("items"), slot{i, n}, depth+1)
		if i < len(prefix) {
			it = merge(it, root.example(prefix[i], slot{}, depth+1))
		}
		a.items = append(a.items, it)
	}
	return a
}

// merge returns b laid over a: the members of two objects merged, deeply;
// otherwise b, unless b is nothing (a null of a schema without a type).
func merge(a, b *node) *node {
	switch {
	case a.object && b.object:
		o := &node{object: true, fields: map[string]*node{}, keys: slices.Clone(a.keys)}
		for k, v := range a.fields {
			o.fields[k] = v
		}
		for _, k := range b.keys {
			if old, ok := o.fields[k]; ok {
				o.fields[k] = merge(old, b.fields[k])
				continue
			}
			o.keys = append(o.keys, k)
			o.fields[k] = b.fields[k]
		}
		return o
	case !b.object && !b.array && b.value == nil:
		return a
	}
	return b
}

// fromPattern returns a string that the regular expression p matches, made
// of characters chosen steadily from its classes, so that the same document
// gives the same page. "" when p does not parse.
func fromPattern(p string) string {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return ""
	}
	var b strings.Builder
	seed := uint32(len(p))
	generate(re, &b, &seed)
	return b.String()
}

func generate(re *syntax.Regexp, b *strings.Builder, seed *uint32) {
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		b.WriteRune(pick(re.Rune, seed))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('x')
	case syntax.OpCapture:
		generate(re.Sub[0], b, seed)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			generate(sub, b, seed)
		}
	case syntax.OpAlternate:
		generate(re.Sub[0], b, seed)
	case syntax.OpPlus, syntax.OpRepeat:
		n, most := re.Min, re.Max
		if re.Op == syntax.OpPlus {
			n, most = 1, -1
		}
		if n != most {
			// An open length: a few characters of a small class (digits),
			// an identifier's worth of a large one.
			n = 16
			if re.Sub[0].Op == syntax.OpCharClass && classSize(re.Sub[0].Rune) <= 10 {
				n = 1
			}
			n = max(n, re.Min)
			if most >= 0 {
				n = min(n, most)
			}
		}
		for range n {
			generate(re.Sub[0], b, seed)
		}
	}
	// Anchors, empty matches, star and quest add nothing.
}

// pick returns a printable character of the class ranges, the next one of
// a fixed pseudo-random sequence.
func pick(ranges []rune, seed *uint32) rune {
	size := classSize(ranges)
	if size == 0 {
		return 'x'
	}
	for range 8 {
		*seed = *seed*1664525 + 1013904223
		i := int(*seed>>8) % size
		for j := 0; j+1 < len(ranges); j += 2 {
			if n := int(ranges[j+1]-ranges[j]) + 1; i < n {
				if r := ranges[j] + rune(i); unicode.IsPrint(r) && r < 0x7f {
					return r
				}
				break
			} else {
				i -= n
			}
		}
	}
	return ranges[0]
}

func classSize(ranges []rune) int {
	n := 0
	for j := 0; j+1 < len(ranges); j += 2 {
		n += int(ranges[j+1]-ranges[j]) + 1
	}
	return n
}

// indentJSON writes n as JSON indented by two spaces, keys in order.
func (n *node) indentJSON() string {
	var b strings.Builder
	n.writeIndented(&b, "")
	return b.String()
}

func (n *node) writeIndented(b *strings.Builder, indent string) {
	inner := indent + "  "
	switch {
	case n.object && len(n.keys) == 0:
		b.WriteString("{}")
	case n.object:
		b.WriteString("{\n")
		for i, k := range n.keys {
			kb, _ := json.Marshal(k)
			b.WriteString(inner)
			b.Write(kb)
			b.WriteString(": ")
			n.fields[k].writeIndented(b, inner)
			if i < len(n.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case n.array && len(n.items) == 0:
		b.WriteString("[]")
	case n.array:
		b.WriteString("[\n")
		for i, it := range n.items {
			b.WriteString(inner)
			it.writeIndented(b, inner)
			if i < len(n.items)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	default:
		vb, _ := json.Marshal(n.value)
		b.Write(vb)
	}
}
