// Package genclients holds Go clients generated from api/openapi.yaml by two
// generators that no one here wrote, oapi-codegen (oapiclient) and ogen
// (ogenclient), each with its default settings, and the tests that keep the
// document within their reach: the committed code must be what the pinned
// generators make of the document today (TestGeneratedCodeIsCurrent), and a
// real server must answer every operation, on both addresses, in a way both
// clients decode (TestGeneratedClients).
//
// It is a module of its own so that the generators, pinned as tool
// directives in its go.mod, and the runtime libraries of their code do not
// become dependencies of cdnapi itself. Regenerate with `go generate` here.
package genclients

//go:generate go tool oapi-codegen -generate types,client -package oapiclient -o oapiclient/client.gen.go ../../api/openapi.yaml
//go:generate go tool ogen -package ogenclient -target ogenclient -clean ../../api/openapi.yaml
