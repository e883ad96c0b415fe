package client

import (
	"context"
	"net/http"

	"github.com/cdnapi/cdnapi"
)

// GetFiles fetches a files page from any URL, for the tests of answers the
// typed calls never ask for.
func GetFiles(ctx context.Context, c *Client, url string) (Page[cdnapi.File], error) {
	return get(ctx, c, url, filePages)
}

// ErrorOf is newError, for the one error no GET can cause: 405.
func ErrorOf(res *http.Response, body []byte) *Error { return newError(res, body) }

// DecodeFiles and DecodeAssets decode a page's body, for the benchmarks.
var (
	DecodeFiles  = decodeFiles
	DecodeAssets = decodeAssets
)
