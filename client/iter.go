package client

import (
	"context"
	"errors"
	"iter"

	"github.com/cdnapi/cdnapi"
)

// Files returns every file of the current project from p.Cursor on (from
// the newest when it is ""), p.Limit per request, following next_cursor
// until the last page.
//
// The walk yields each file once with a nil error. It ends after the last
// file, when the loop breaks, or with one final (zero File, error) pair when
// a request fails after its retries or ctx ends. It never repeats or skips a
// file, even when a page had to be retried; files inserted during the walk
// appear in it only if they sort after its position, that is, if they are
// older than the files already yielded.
func (c *Client) Files(ctx context.Context, p ListFilesParams) iter.Seq2[cdnapi.File, error] {
	return walk(ctx, p.Cursor, func(cursor string) (Page[cdnapi.File], error) {
		p.Cursor = cursor
		return c.ListFiles(ctx, p)
	})
}

// Assets returns every asset of p.Region (of every region when it is "")
// from p.Cursor on, p.Limit per request, following next_cursor until the
// last page. It ends and never repeats or skips, as Files does.
func (c *Client) Assets(ctx context.Context, p ListAssetsParams) iter.Seq2[cdnapi.Asset, error] {
	return walk(ctx, p.Cursor, func(cursor string) (Page[cdnapi.Asset], error) {
		p.Cursor = cursor
		return c.ListAssets(ctx, p)
	})
}

// walk yields the items of the pages that list returns, from cursor on.
func walk[T any](ctx context.Context, cursor string, list func(cursor string) (Page[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		for {
			page, err := list(cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, item := range page.Items {
				if err := ctx.Err(); err != nil {
					yield(zero, err)
					return
				}
				if !yield(item, nil) {
					return
				}
			}
			if !page.HasMore {
				return
			}
			if page.NextCursor == cursor {
				// The same page again: following it would repeat items
				// for ever.
				yield(zero, errSameCursor)
				return
			}
			cursor = page.NextCursor
		}
	}
}

var errSameCursor = errors.New("client: the server gave the cursor of the page as its next_cursor")
