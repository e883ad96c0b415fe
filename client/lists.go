package client

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"

	"github.com/cdnapi/cdnapi"
)

// Page is one page of a list: its items, in the list's order, and where the
// next page starts.
type Page[T any] struct {
	Items []T
	// HasMore reports that more items follow; NextCursor then continues
	// after the last of Items, and is "" otherwise.
	HasMore    bool
	NextCursor string
}

// ListFilesParams selects a page of files.
type ListFilesParams struct {
	Limit  int    // items per page, 1 to 100; 0 leaves it to the server (20)
	Cursor string // the NextCursor of the previous page; "" for the first
}

// ListAssetsParams selects a page of assets.
type ListAssetsParams struct {
	Limit  int    // items per page, 1 to 100; 0 leaves it to the server (20)
	Region string // a region code such as "FRA1"; "" for every region
	Cursor string // the NextCursor of the previous page; "" for the first
}

// errNoAPI and errNoEdge are the errors of a call to an address New was
// not given.
var (
	errNoAPI  = errors.New("client: no API URL was given to New")
	errNoEdge = errors.New("client: no edge URL was given to New")
)

// ListFiles returns one page of the current project's files (the API key's
// project, or the server's default one), newest first. The Project of every
// File is empty: the API does not show it.
func (c *Client) ListFiles(ctx context.Context, p ListFilesParams) (Page[cdnapi.File], error) {
	if c.api == "" {
		return Page[cdnapi.File]{}, errNoAPI
	}
	return get(ctx, c, c.api+"/api/v1/files"+query(p.Limit, "", p.Cursor), filePages)
}

// ListAssets returns one page of recently requested assets, newest first, of
// one region or of all.
func (c *Client) ListAssets(ctx context.Context, p ListAssetsParams) (Page[cdnapi.Asset], error) {
	if c.edge == "" {
		return Page[cdnapi.Asset]{}, errNoEdge
	}
	return get(ctx, c, c.edge+"/api/v1/assets"+query(p.Limit, p.Region, p.Cursor), assetPages)
}

// ListRegions returns every region (point of presence), ordered by code.
// Regions come in one page.
func (c *Client) ListRegions(ctx context.Context) (Page[cdnapi.Region], error) {
	if c.edge == "" {
		return Page[cdnapi.Region]{}, errNoEdge
	}
	return get(ctx, c, c.edge+"/api/v1/regions", regionPages)
}

// Status returns the status document of the service.
func (c *Client) Status(ctx context.Context) (cdnapi.StatusDocument, error) {
	if c.api == "" {
		return cdnapi.StatusDocument{}, errNoAPI
	}
	return get(ctx, c, c.api+"/api/v1/status", statusDocuments)
}

// query returns the query string of a list request, with a leading "?", or
// "" when every parameter is left to the server. The parameters are sent as
// given: checking them is the server's job, and its errors say what to fix.
func query(limit int, region, cursor string) string {
	q := url.Values{}
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if region != "" {
		q.Set("region", region)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// clonePage copies the items of p, so that a page kept in the cache and the
// pages handed out from it never share an array.
func clonePage[T any](p Page[T]) Page[T] {
	p.Items = slices.Clone(p.Items)
	return p
}

var (
	filePages       = codec[Page[cdnapi.File]]{decodeFiles, clonePage[cdnapi.File]}
	assetPages      = codec[Page[cdnapi.Asset]]{decodeAssets, clonePage[cdnapi.Asset]}
	regionPages     = codec[Page[cdnapi.Region]]{decodeRegions, clonePage[cdnapi.Region]}
	statusDocuments = codec[cdnapi.StatusDocument]{decodeStatus, func(d cdnapi.StatusDocument) cdnapi.StatusDocument {
		d.Components = slices.Clone(d.Components)
		return d
	}}
)
