package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/cdnapi/cdnapi"
)

// This file is the paged-list flow that every list with a cursor goes
// through: its query is parsed once into a pageQuery (query.go), which
// names the page to the page cache and then renders it with renderPage.
// A new list brings its parser, its store read and its item encoder; the
// look-ahead row, the envelope, the next cursor and the Link are here.

// render produces the representation of a successful answer to r, or the
// error to answer with. A representation it returns is never changed again,
// so it may be served to other requests.
type render func(r *http.Request) (*representation, error)

// parseList reads a request for a page of a list, and fails with the error to
// answer with when the request is not valid.
type parseList func(r *http.Request) (listRequest, error)

// listRequest is a valid request for a page of a list. key names the page
// canonically, from the parsed request, so that every spelling of one
// request (parameter order, "limit=05", the same position in another cursor)
// shares one entry of the page cache. render produces the page.
type listRequest struct {
	key    string
	render render
}

// pageQuery is a request for one page of a list, from parse to render: the
// limit, the position the page starts after (nil for the first page), and
// the cursors of the list and filter it was asked under, which decoded the
// request's cursor and encode the next page's, so the two always agree.
type pageQuery struct {
	limit   int
	after   *cdnapi.Position
	cursors cdnapi.ListCursors
}

// key returns the page cache's key of the page, in a list under filter;
// keyed says that an API key chose the filter (see pageKey).
func (pq pageQuery) key(list, filter string, keyed bool) string {
	return pageKey(list, filter, keyed, pq.limit, pq.after)
}

// pageKey returns the canonical key of a page: the list, its filter (the
// project of files, the region of assets), whether an API key chose the
// filter (its answers are private, with another Cache-Control), the limit
// and the position the page starts after.
func pageKey(list, filter string, keyed bool, limit int, after *cdnapi.Position) string {
	b := make([]byte, 0, 96)
	b = append(b, list...)
	b = append(b, 0)
	b = append(b, filter...)
	b = append(b, 0)
	if keyed {
		b = append(b, 'k')
	}
	b = append(b, 0)
	b = strconv.AppendInt(b, int64(limit), 10)
	if after != nil {
		b = append(b, 0)
		b = strconv.AppendInt(b, after.CreatedAt.UnixNano(), 10)
		b = append(b, 0)
		b = append(b, after.ID...)
	}
	return string(b)
}

// positioned is an item of a paged list: it knows the position a cursor
// continues after.
type positioned interface{ Position() cdnapi.Position }

// pagedList is what renders the pages of one list for one filter, besides
// the query: how its rows are read and written, and the headers of a page.
type pagedList[T positioned] struct {
	// fetch reads up to limit rows after after (nil: from the newest),
	// newest first. The error of a failing store is logged and answered
	// as storage_unavailable; a *cdnapi.Error is answered as it is.
	fetch        func(ctx context.Context, after *cdnapi.Position, limit int) ([]T, error)
	appendItem   func([]byte, T) []byte
	cacheControl string
	vary         string // beyond Accept-Encoding; may be ""
	// path is the list's, which the Link to the next page points to;
	// params are the page's parameters besides limit and cursor, each
	// as "&name=value", spelled canonically and needing no escape.
	path, params string
}

// renderPage renders the page of l that pq asks for. It reads one row more
// than the limit, within the store timeout: that row tells whether there
// is a next page, and is not shown.
func renderPage[T positioned](r *http.Request, storeTimeout time.Duration, pq pageQuery, l pagedList[T]) (*representation, error) {
	ctx, cancel := context.WithTimeout(r.Context(), storeTimeout)
	rows, err := l.fetch(ctx, pq.after, pq.limit+1)
	cancel()
	if err != nil {
		return nil, storeError(r, err)
	}
	rep := &representation{contentType: "application/json", cacheControl: l.cacheControl, vary: l.vary}
	next := l.path + "?limit=" + strconv.Itoa(pq.limit) + l.params
	renderList(rep, pageOf(rows, pq.limit), l.appendItem, pq.cursors.Encode, next)
	return rep, nil
}

// pagedRequest is the request for the page of l that pq asks for, under
// key, whose store read is bounded by storeTimeout. It is made for every
// request, a page-cache hit too, so its closure holds only what renderPage
// needs: holding a whole Config moved a copy of it to the heap each time,
// 224 of the 1,155 bytes a hot page allocated (BenchmarkHotPage).
func pagedRequest[T positioned](storeTimeout time.Duration, pq pageQuery, key string, l pagedList[T]) listRequest {
	return listRequest{key: key, render: func(r *http.Request) (*representation, error) {
		return renderPage(r, storeTimeout, pq, l)
	}}
}

// page is the part of a list shown in one answer.
type page[T any] struct {
	items []T
	// more reports that rows follow; last is then the position of the
	// last item shown, which the next cursor continues after.
	more bool
	last cdnapi.Position
}

// pageOf makes a page of rows fetched with a limit of limit+1: an extra row
// means there is a next page, and is not shown.
func pageOf[T positioned](rows []T, limit int) page[T] {
	if len(rows) <= limit {
		return page[T]{items: rows}
	}
	rows = rows[:limit]
	return page[T]{items: rows, more: true, last: rows[len(rows)-1].Position()}
}

// renderList puts p into rep in the list envelope. When there is a next
// page, its cursor goes into next_cursor and, appended to linkBase (a path
// with at least one query parameter), into the Link header.
func renderList[T any](rep *representation, p page[T],
	appendItem func([]byte, T) []byte, encodeCursor func(cdnapi.Position) string, linkBase string) {
	cursor := ""
	if p.more {
		cursor = encodeCursor(p.last)
		// A base64url cursor needs no escaping in a query or a Link.
		rep.link = "<" + linkBase + "&cursor=" + cursor + `>; rel="next"`
	}
	// The body is the representation's own: it may outlive the request in
	// the page cache.
	b := make([]byte, 0, 256+len(p.items)*256)
	b = appendList(b, p.items, appendItem, cursor)
	rep.body = append(b, '\n')
}
