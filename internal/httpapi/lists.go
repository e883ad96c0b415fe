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
		pq, err := parseFilesQuery(r.URL.RawQuery, cfg.Cursors, project)
		if err != nil {
			return listRequest{}, err
		}
		files := pagedList[cdnapi.File]{
			fetch: func(ctx context.Context, after *cdnapi.Position, limit int) ([]cdnapi.File, error) {
				return cfg.Store.ListFiles(ctx, cdnapi.FileQuery{Project: project, After: after, Limit: limit})
			},
			appendItem: appendFile, cacheControl: cacheFiles, path: pathFiles,
		}
		if keyed {
			files.cacheControl, files.vary = cacheFilesPrivate, "Authorization"
		}
		return pagedRequest(cfg.StoreTimeout, pq, pq.key("files", project, keyed), files), nil
	}
}

// assetsRequest parses requests of GET /api/v1/assets: a page of recently requested
// assets, newest first, of one region or of all.
func assetsRequest(cfg Config) parseList {
	return func(r *http.Request) (listRequest, error) {
		pq, region, err := parseAssetsQuery(r.URL.RawQuery, cfg.Cursors)
		if err != nil {
			return listRequest{}, err
		}
		assets := pagedList[cdnapi.Asset]{
			fetch: func(ctx context.Context, after *cdnapi.Position, limit int) ([]cdnapi.Asset, error) {
				if err := checkRegion(ctx, cfg.Store, region); err != nil {
					return nil, err
				}
				return cfg.Store.ListAssets(ctx, cdnapi.AssetQuery{Region: region, After: after, Limit: limit})
			},
			appendItem: appendAsset, cacheControl: cacheAssets, path: pathAssets,
		}
		if region != "" {
			assets.params = "&region=" + region // a checked code: nothing to escape
		}
		return pagedRequest(cfg.StoreTimeout, pq, pq.key("assets", region, false), assets), nil
	}
}

// checkRegion fails with region_unknown when region, if not "", names no
// point of presence the store knows.
func checkRegion(ctx context.Context, store cdnapi.RegionReader, region string) error {
	if region == "" {
		return nil
	}
	_, err := store.Region(ctx, region)
	if isNotFound(err) {
		return cdnapi.Errorf(cdnapi.CodeRegionUnknown, "region",
			"region names no known point of presence; GET /api/v1/regions lists them")
	}
	return err
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

// isNotFound reports whether err is the store's ErrNotFound.
func isNotFound(err error) bool { return errors.Is(err, cdnapi.ErrNotFound) }
