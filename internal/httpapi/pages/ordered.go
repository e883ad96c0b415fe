package pages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// node is a JSON value that keeps the order of object keys, so that the
// reference lists paths, parameters and fields in the order the OpenAPI
// document gives them.
type node struct {
	keys   []string         // object keys, in order
	fields map[string]*node // object members
	items  []*node          // array items
	value  any              // a scalar: string, json.Number, bool or nil
	object bool
	array  bool
}

// parseNode decodes JSON into a node.
func parseNode(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := decodeNode(dec)
	if err != nil {
		return nil, fmt.Errorf("pages: the OpenAPI document: %w", err)
	}
	return n, nil
}

func decodeNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		n := &node{object: true, fields: map[string]*node{}}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			key := k.(string)
			if _, dup := n.fields[key]; !dup {
				n.keys = append(n.keys, key)
			}
			n.fields[key] = v
		}
		_, err := dec.Token() // }
		return n, err
	case json.Delim('['):
		n := &node{array: true}
		for dec.More() {
			v, err := decodeNode(dec)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
		_, err := dec.Token() // ]
		return n, err
	}
	return &node{value: tok}, nil
}

// get returns the member at the path of keys, or nil.
func (n *node) get(keys ...string) *node {
	for _, k := range keys {
		if n == nil || !n.object {
			return nil
		}
		n = n.fields[k]
	}
	return n
}

// str returns the string at the path of keys, or "".
func (n *node) str(keys ...string) string {
	v := n.get(keys...)
	if v == nil {
		return ""
	}
	s, _ := v.value.(string)
	return s
}

// text writes a scalar, or an array of scalars, as JSON-like text for
// people: strings unquoted.
func (n *node) text() string {
	if n == nil {
		return ""
	}
	if n.array {
		parts := make([]string, len(n.items))
		for i, it := range n.items {
			parts[i] = it.text()
		}
		return strings.Join(parts, ", ")
	}
	if n.object {
		return n.json()
	}
	switch v := n.value.(type) {
	case nil:
		return "null"
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// json writes n back as compact JSON, keys in order.
func (n *node) json() string {
	var b strings.Builder
	n.writeJSON(&b)
	return b.String()
}

func (n *node) writeJSON(b *strings.Builder) {
	switch {
	case n.object:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			n.fields[k].writeJSON(b)
		}
		b.WriteByte('}')
	case n.array:
		b.WriteByte('[')
		for i, it := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			it.writeJSON(b)
		}
		b.WriteByte(']')
	default:
		vb, _ := json.Marshal(n.value)
		b.Write(vb)
	}
}

// resolve follows a local $ref ("#/components/…") to its target, and
// returns the node and the name of the component it names ("" when n is
// not a reference).
func (root *node) resolve(n *node) (*node, string) {
	for i := 0; n != nil && i < 10; i++ {
		ref := n.str("$ref")
		if ref == "" {
			break
		}
		path := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
		name := path[len(path)-1]
		n = root.get(path...)
		if n == nil {
			return nil, name
		}
		if n.str("$ref") == "" {
			return n, name
		}
	}
	return n, ""
}
