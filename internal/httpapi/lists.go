package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/cdnapi/cdnapi"
)

// The Cache-Control of each list, exactly as the spec gives them. Files
// listed for an API key's project are private to that key.
const (
	cacheFiles        = "public, max-age=60"
	cacheFilesPrivate = "private, max-age=60"
	cacheAssets       = "public, max-age=60"
	cacheRegions      = "public, max-age=300"
)

// The paths of the lists, which their Link headers point back to.
const (
	pathFiles   = "/api/v1/files"
	pathAssets  = "/api/v1/assets"
	pathRegions = "/api/v1/regions"
)

// currentProject returns the project whose files a request lists: the one
// of the request's API key, and whether it has one, else the default.
func currentProject(ctx context.Context, def string) (string, bool) {
	if p, ok := projectFrom(ctx); ok {
		return p, true
	}
	return def, false
}

// filesRequest parses requests of GET /api/v1/files: a page of the current project's
// files, newest first.
func filesRequest(cfg Config) parseList {
	return func(r *http.Request) (listRequest, error) {
		project, keyed := currentProject(r.Context(), cfg.Project)
		q, err := parseFilesQuery(r.URL.RawQuery, cfg.Cursors, project)
		if err != nil {
			return listRequest{}, err
		}
		return listRequest{
			key:    pageKey("files", project, keyed, q.Limit, q.After),
			render: func(r *http.Request) (*representation, error) { return filesPage(cfg, r, q, project, keyed) },
		}, nil
	}
}

// filesPage renders the page of files that q asks for.
func filesPage(cfg Config, r *http.Request, q cdnapi.FileQuery, project string, keyed bool) (*representation, error) {
	limit := q.Limit
	q.Limit++ // one more row than shown tells whether there is a next page
	ctx, cancel := context.WithTimeout(r.Context(), cfg.StoreTimeout)
	files, err := cfg.Store.ListFiles(ctx, q)
	cancel()
	if err != nil {
		return nil, storeError(r, err)
	}
	rep := &representation{contentType: "application/json", cacheControl: cacheFiles}
	if keyed {
		rep.cacheControl, rep.vary = cacheFilesPrivate, "Authorization"
	}
	page := pageOf(files, limit)
	renderList(rep, page, appendFile, func(p cdnapi.Position) string {
		return cfg.Cursors.Files(project).Encode(p)
	}, pathFiles+"?limit="+strconv.Itoa(limit))
	return rep, nil
}

// assetsRequest parses requests of GET /api/v1/assets: a page of recently requested
// assets, newest first, of one region or of all.
func assetsRequest(cfg Config) parseList {
	return func(r *http.Request) (listRequest, error) {
		q, err := parseAssetsQuery(r.URL.RawQuery, cfg.Cursors)
		if err != nil {
			return listRequest{}, err
		}
		return listRequest{
			key:    pageKey("assets", q.Region, false, q.Limit, q.After),
			render: func(r *http.Request) (*representation, error) { return assetsPage(cfg, r, q) },
		}, nil
	}
}

// assetsPage renders the page of assets that q asks for.
func assetsPage(cfg Config, r *http.Request, q cdnapi.AssetQuery) (*representation, error) {
	ctx, cancel := context.WithTimeout(r.Context(), cfg.StoreTimeout)
	defer cancel()
	if q.Region != "" {
		if _, err := cfg.Store.Region(ctx, q.Region); err != nil {
			if isNotFound(err) {
				return nil, cdnapi.Errorf(cdnapi.CodeRegionUnknown, "region",
					"region names no known point of presence; GET /api/v1/regions lists them")
			}
			return nil, storeError(r, err)
		}
	}
	limit := q.Limit
	q.Limit++
	assets, err := cfg.Store.ListAssets(ctx, q)
	if err != nil {
		return nil, storeError(r, err)
	}
	next := pathAssets + "?limit=" + strconv.Itoa(limit)
	if q.Region != "" {
		next += "&region=" + q.Region // a checked code: nothing to escape
	}
	rep := &representation{contentType: "application/json", cacheControl: cacheAssets}
	page := pageOf(assets, limit)
	renderList(rep, page, appendAsset, func(p cdnapi.Position) string {
		return cfg.Cursors.Assets(q.Region).Encode(p)
	}, next)
	return rep, nil
}

// regionsRequest parses requests of GET /api/v1/regions: every point of presence, by
// code. The list is short, so it is never paged.
func regionsRequest(cfg Config) parseList {
	return func(r *http.Request) (listRequest, error) {
		if err := parseNoQuery(r.URL.RawQuery); err != nil {
			return listRequest{}, err
		}
		return listRequest{key: regionsKey(cfg), render: func(r *http.Request) (*representation, error) { return regionsPage(cfg, r) }}, nil
	}
}

// regionsKey is the page cache's key of the regions list. A change of a
// probed region's status makes a new key rather than removing the old
// entry: a render that began before the change and ends after it can
// then never put the old state back under the key that requests use.
// Renders read the version before the regions, so an entry never holds
// a state older than its key says.
func regionsKey(cfg Config) string {
	if cfg.RegionsVersion == nil {
		return "regions"
	}
	return "regions\x00" + strconv.FormatUint(cfg.RegionsVersion(), 10)
}

// regionsPage renders the list of regions.
func regionsPage(cfg Config, r *http.Request) (*representation, error) {
	ctx, cancel := context.WithTimeout(r.Context(), cfg.StoreTimeout)
	regions, err := cfg.Store.ListRegions(ctx)
	cancel()
	if err != nil {
		return nil, storeError(r, err)
	}
	rep := &representation{contentType: "application/json", cacheControl: cacheRegions}
	renderList(rep, page[cdnapi.Region]{items: regions}, appendRegion, nil, "")
	return rep, nil
}

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
func pageOf[T interface{ Position() cdnapi.Position }](rows []T, limit int) page[T] {
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

// isNotFound reports whether err is the store's ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, cdnapi.ErrNotFound) }
