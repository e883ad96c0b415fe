package storetest

import (
	"context"

	"github.com/cdnapi/cdnapi"
)

// Writer returns a cdnapi.Writer whose every call writes through s.Write,
// in a transaction of its own: all of the call's records or none. A call
// with no records writes nothing. Tests use it to write fixtures a few at a
// time; programs write through Write.
func Writer(s cdnapi.Transactor) cdnapi.Writer { return oneShot{s} }

type oneShot struct{ s cdnapi.Transactor }

func (o oneShot) PutFiles(ctx context.Context, files []cdnapi.File) error {
	return put(ctx, o.s, files, cdnapi.Writer.PutFiles)
}

func (o oneShot) PutAssets(ctx context.Context, assets []cdnapi.Asset) error {
	return put(ctx, o.s, assets, cdnapi.Writer.PutAssets)
}

func (o oneShot) PutRegions(ctx context.Context, regions []cdnapi.Region) error {
	return put(ctx, o.s, regions, cdnapi.Writer.PutRegions)
}

func (o oneShot) DeleteFiles(ctx context.Context, project string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return o.s.Write(ctx, func(w cdnapi.Writer) error { return w.DeleteFiles(ctx, project, ids) })
}

// MoveLogPosition moves a position in a Write of its own, with no rows.
func (o oneShot) MoveLogPosition(ctx context.Context, from, to cdnapi.LogPosition) error {
	return o.s.Write(ctx, func(w cdnapi.Writer) error { return w.MoveLogPosition(ctx, from, to) })
}

func put[T any](ctx context.Context, s cdnapi.Transactor, records []T, method func(cdnapi.Writer, context.Context, []T) error) error {
	if len(records) == 0 {
		return nil
	}
	return s.Write(ctx, func(w cdnapi.Writer) error { return method(w, ctx, records) })
}
