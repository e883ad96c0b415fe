// Package cdnapi holds the domain of the cdnapi read API: the files, points of
// presence (regions) and cached assets it lists, the status document it reports,
// the Store interface that storage engines implement, the one Error type that
// the HTTP edge maps to status codes, and the keyset cursors that page through
// the lists.
//
// Nothing in this package knows about SQL or HTTP. Engines live in
// internal/sqlite and internal/postgres, the HTTP adapter in internal/httpapi,
// and cmd/cdnapi wires them together.
package cdnapi
