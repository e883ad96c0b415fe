package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// The cases of the log followers' positions (cdnapi.LogPosition): a move is
// a compare-and-set committed with the rows it covers, or not at all.

// logPosition returns a position of stream in the file (device, inode) at
// offset, its other fields derived from those. NewestAt has nanoseconds,
// which the store may cut to microseconds (see samePosition).
func logPosition(stream string, device, inode uint64, offset int64) cdnapi.LogPosition {
	path := "/var/log/nginx/" + stream + ".log"
	head := sha256.Sum256(fmt.Appendf(nil, "%s %d %d", path, device, inode))
	return cdnapi.LogPosition{
		Stream:    stream,
		Path:      path,
		Device:    device,
		Inode:     inode,
		Offset:    offset,
		Head:      hex.EncodeToString(head[:]),
		HeadBytes: min(offset, 1024),
		Lines:     offset / 120,
		NewestAt:  Epoch.Add(time.Duration(offset)*time.Millisecond + 123_456_789),
		// The store sets UpdatedAt; one given is ignored.
		UpdatedAt: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

// diffPosition describes how got differs from want, or returns "". Times
// are compared to the microsecond, which both engines keep, and must be in
// UTC; UpdatedAt must be the store's clock, from a little before start to
// now.
func diffPosition(want, got cdnapi.LogPosition, start time.Time) string {
	same := got.Stream == want.Stream && got.Path == want.Path && got.Device == want.Device &&
		got.Inode == want.Inode && got.Offset == want.Offset && got.Head == want.Head &&
		got.HeadBytes == want.HeadBytes && got.Lines == want.Lines &&
		got.NewestAt.Equal(want.NewestAt.Truncate(time.Microsecond)) &&
		(got.NewestAt.IsZero() || got.NewestAt.Location() == time.UTC)
	if !same {
		return fmt.Sprintf("got %+v, want %+v", got, want)
	}
	// A second of slack either way: PostgreSQL's clock is the server's.
	if got.UpdatedAt.Location() != time.UTC || got.UpdatedAt.Before(start.Add(-time.Second)) ||
		got.UpdatedAt.After(time.Now().Add(time.Second)) {
		return fmt.Sprintf("UpdatedAt %v is not the store's clock in UTC, at or after %v", got.UpdatedAt, start)
	}
	return ""
}

// checkPosition fails t unless the stored position of want.Stream is want.
func checkPosition(t *testing.T, s cdnapi.Store, want cdnapi.LogPosition, start time.Time) {
	t.Helper()
	got, err := s.LogPosition(t.Context(), want.Stream)
	if err != nil {
		t.Fatalf("LogPosition(%s): %v", want.Stream, err)
	}
	if d := diffPosition(want, got, start); d != "" {
		t.Errorf("LogPosition(%s): %s", want.Stream, d)
	}
}

// moveWith writes assets and moves a position from from to to, in one
// Write, as a follower commits a batch of lines; then fn returns fnErr.
func moveWith(ctx context.Context, s cdnapi.Store, assets []cdnapi.Asset, from, to cdnapi.LogPosition, fnErr error) error {
	return s.Write(ctx, func(w cdnapi.Writer) error {
		if err := w.PutAssets(ctx, assets); err != nil {
			return err
		}
		if err := w.MoveLogPosition(ctx, from, to); err != nil {
			return err
		}
		return fnErr
	})
}

// assetsStored counts how many of assets the store lists.
func assetsStored(t *testing.T, s cdnapi.Store, assets []cdnapi.Asset) int {
	t.Helper()
	stored := make(map[string]bool)
	for _, a := range walkAssets(t, s, "", cdnapi.MaxLimit) {
		stored[a.ID] = true
	}
	n := 0
	for _, a := range assets {
		if stored[a.ID] {
			n++
		}
	}
	return n
}

// testMoveLogPosition commits a follower's batches one after another, each
// in a Write with its assets, from the zero position on: a move from the
// stored position commits both, and any other move fails with
// ErrPositionMoved and commits neither. Each step starts from what the
// steps before it left.
func testMoveLogPosition(t *testing.T, s cdnapi.Store) {
	putRegions(t, s, Regions())
	codes := RegionCodes(Regions())
	const stream = "edge-fra1"
	var zero cdnapi.LogPosition
	p1 := logPosition(stream, 2049, 131, 4096)
	p2 := logPosition(stream, 2049, 131, 9000)
	p3 := logPosition(stream, 2049, 131, 12000)
	rotated := logPosition(stream, 2049, 977, 300) // the log after logrotate: a new inode
	rotated.Lines = p2.Lines + 2                   // lines count across files
	otherInode := p2
	otherInode.Inode++
	otherDevice := p2
	otherDevice.Device++
	noNewest := logPosition(stream, 2049, 977, 700)
	noNewest.NewestAt = time.Time{}
	refused := errors.New("the follower gives up")

	tests := []struct {
		name     string
		from, to cdnapi.LogPosition
		fnErr    error              // what fn returns after a successful move
		want     error              // what Write's error must wrap; nil for success
		stored   cdnapi.LogPosition // the position afterwards
	}{
		{"the first move, from zero, inserts", zero, p1, nil, nil, p1},
		{"a move from the stored position", p1, p2, nil, nil, p2},
		{"a move from a stale offset", p1, p3, nil, cdnapi.ErrPositionMoved, p2},
		{"a move from zero when one is stored", zero, p3, nil, cdnapi.ErrPositionMoved, p2},
		{"a move from another inode at the offset", otherInode, p3, nil, cdnapi.ErrPositionMoved, p2},
		{"a move from another device at the offset", otherDevice, p3, nil, cdnapi.ErrPositionMoved, p2},
		{"fn fails after the move", p2, p3, refused, refused, p2},
		{"a move to the next file", p2, rotated, nil, nil, rotated},
		{"a move with no request time yet", rotated, noNewest, nil, nil, noNewest},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assets := Assets(20, codes, 300+uint64(i))
			start := time.Now()
			err := moveWith(t.Context(), s, assets, tt.from, tt.to, tt.fnErr)
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("Write = %v, want nil", err)
			case tt.want != nil && !errors.Is(err, tt.want):
				t.Fatalf("Write = %v, want %v", err, tt.want)
			}
			want := 0
			if tt.want == nil {
				want = len(assets)
			}
			if n := assetsStored(t, s, assets); n != want {
				t.Errorf("%d of the Write's %d assets are stored, want %d", n, len(assets), want)
			}
			checkPosition(t, s, tt.stored, start)
		})
	}
}

// testMoveLogPositionInWrite checks moves within one Write: two in a row
// see each other, a failed move fails the Write even when fn ignores its
// error (committing the Write's rows would write lines twice), and a move
// the store could not keep is refused before it is tried.
func testMoveLogPositionInWrite(t *testing.T, s cdnapi.Store) {
	putRegions(t, s, Regions())
	codes := RegionCodes(Regions())
	ctx := t.Context()
	p1, p2, p3 := logPosition("a", 1, 2, 100), logPosition("a", 1, 2, 200), logPosition("a", 1, 2, 300)
	start := time.Now()
	err := s.Write(ctx, func(w cdnapi.Writer) error {
		if err := w.MoveLogPosition(ctx, cdnapi.LogPosition{}, p1); err != nil {
			return err
		}
		return w.MoveLogPosition(ctx, p1, p2)
	})
	if err != nil {
		t.Fatalf("two moves in one Write: %v", err)
	}
	checkPosition(t, s, p2, start)

	assets := Assets(10, codes, 320)
	err = s.Write(ctx, func(w cdnapi.Writer) error {
		if err := w.PutAssets(ctx, assets); err != nil {
			return err
		}
		if err := w.MoveLogPosition(ctx, p1, p3); !errors.Is(err, cdnapi.ErrPositionMoved) {
			t.Errorf("MoveLogPosition from a stale position = %v, want ErrPositionMoved", err)
		}
		return nil // as a careless caller would
	})
	if !errors.Is(err, cdnapi.ErrPositionMoved) {
		t.Errorf("Write whose fn ignored ErrPositionMoved = %v, want ErrPositionMoved", err)
	}
	if n := assetsStored(t, s, assets); n != 0 {
		t.Errorf("%d assets of the failed Write are stored, want none", n)
	}
	checkPosition(t, s, p2, start)

	negative := p3
	negative.Offset = -1
	for name, m := range map[string][2]cdnapi.LogPosition{
		"no stream":         {p2, cdnapi.LogPosition{Path: "/x"}},
		"another stream":    {p2, logPosition("b", 1, 2, 300)},
		"a negative offset": {p2, negative},
	} {
		err := Writer(s).MoveLogPosition(ctx, m[0], m[1])
		if err == nil || errors.Is(err, cdnapi.ErrPositionMoved) {
			t.Errorf("a move with %s = %v, want an error other than ErrPositionMoved", name, err)
		}
	}
	checkPosition(t, s, p2, start)
	if _, err := s.LogPosition(ctx, "b"); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Errorf("LogPosition(b) = %v, want ErrNotFound", err)
	}
}

// testLogPositionWideNumbers stores devices and inodes that use the top
// bit of a uint64, which neither engine has an unsigned type for, and moves
// from them: they round-trip and compare exactly.
func testLogPositionWideNumbers(t *testing.T, s cdnapi.Store) {
	w := Writer(s)
	ctx := t.Context()
	for i, n := range []uint64{1 << 63, math.MaxUint64, 1<<63 + 12345, math.MaxInt64, 0} {
		stream := fmt.Sprintf("wide-%d", i)
		p1 := logPosition(stream, n, n, 10)
		p2 := logPosition(stream, n, n^1, 20) // a neighbour of n, to tell them apart
		start := time.Now()
		if err := w.MoveLogPosition(ctx, cdnapi.LogPosition{}, p1); err != nil {
			t.Fatalf("MoveLogPosition to device and inode %d: %v", n, err)
		}
		checkPosition(t, s, p1, start)
		stale := p1
		stale.Device ^= 1
		if err := w.MoveLogPosition(ctx, stale, p2); !errors.Is(err, cdnapi.ErrPositionMoved) {
			t.Errorf("a move from device %d, stored %d = %v, want ErrPositionMoved", stale.Device, n, err)
		}
		if err := w.MoveLogPosition(ctx, p1, p2); err != nil {
			t.Fatalf("MoveLogPosition from device and inode %d: %v", n, err)
		}
		checkPosition(t, s, p2, start)
	}
}

// testLogPositionsList lists positions in byte order of their streams,
// reads one, and deletes them: a deleted or unknown stream is ErrNotFound,
// and a new follower of a deleted stream starts again from zero.
func testLogPositionsList(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	if got, err := s.LogPositions(ctx); err != nil || len(got) != 0 {
		t.Fatalf("LogPositions of an empty store = %d, %v; want none", len(got), err)
	}
	if _, err := s.LogPosition(ctx, "nowhere"); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Errorf("LogPosition of an unknown stream = %v, want ErrNotFound", err)
	}
	// Byte order: upper case before lower, '-' before '/', ASCII before
	// any multi-byte character.
	streams := []string{"édge", "b", "a/b", "A", "a-b", "/var/log/nginx/access.log", "a"}
	start := time.Now()
	var want []cdnapi.LogPosition
	for i, stream := range streams {
		p := logPosition(stream, 64769, uint64(1000+i), int64(100*i))
		if err := Writer(s).MoveLogPosition(ctx, cdnapi.LogPosition{}, p); err != nil {
			t.Fatalf("MoveLogPosition(%s): %v", stream, err)
		}
		want = append(want, p)
	}
	slices.SortFunc(want, func(a, b cdnapi.LogPosition) int { return strings.Compare(a.Stream, b.Stream) })
	check := func(when string) {
		t.Helper()
		got, err := s.LogPositions(ctx)
		if err != nil {
			t.Fatalf("%s: LogPositions: %v", when, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: LogPositions returned %d, want %d", when, len(got), len(want))
		}
		for i := range want {
			if d := diffPosition(want[i], got[i], start); d != "" {
				t.Errorf("%s: LogPositions[%d]: %s", when, i, d)
			}
		}
	}
	check("after the inserts")

	gone := want[2]
	if err := s.DeleteLogPosition(ctx, gone.Stream); err != nil {
		t.Fatalf("DeleteLogPosition(%s): %v", gone.Stream, err)
	}
	want = slices.Delete(want, 2, 3)
	check("after a delete")
	if _, err := s.LogPosition(ctx, gone.Stream); !errors.Is(err, cdnapi.ErrNotFound) {
		t.Errorf("LogPosition of a deleted stream = %v, want ErrNotFound", err)
	}
	for _, stream := range []string{gone.Stream, "nowhere"} {
		if err := s.DeleteLogPosition(ctx, stream); !errors.Is(err, cdnapi.ErrNotFound) {
			t.Errorf("DeleteLogPosition(%s) = %v, want ErrNotFound", stream, err)
		}
	}
	next := logPosition(gone.Stream, 1, 1, 50)
	if err := Writer(s).MoveLogPosition(ctx, gone, next); !errors.Is(err, cdnapi.ErrPositionMoved) {
		t.Errorf("a move from a deleted position = %v, want ErrPositionMoved", err)
	}
	if err := Writer(s).MoveLogPosition(ctx, cdnapi.LogPosition{}, next); err != nil {
		t.Fatalf("a move from zero after the delete: %v", err)
	}
	checkPosition(t, s, next, start)
}

// testLogPositionRace has followers of one stream commit from the same
// position at once, from zero (two inserts) and from a stored position
// (two updates): exactly one wins, with its assets; every other gets
// ErrPositionMoved and leaves no asset behind.
func testLogPositionRace(t *testing.T, s cdnapi.Store) {
	putRegions(t, s, Regions())
	codes := RegionCodes(Regions())
	const followers = 6
	for round, stored := range []bool{false, true} {
		stream := fmt.Sprintf("race-%d", round)
		var from cdnapi.LogPosition // the zero position: every follower inserts
		if stored {
			from = logPosition(stream, 7, 7, 1000)
			if err := Writer(s).MoveLogPosition(t.Context(), cdnapi.LogPosition{}, from); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		ready := make(chan struct{})
		var wg sync.WaitGroup
		tos := make([]cdnapi.LogPosition, followers)
		batches := make([][]cdnapi.Asset, followers)
		errs := make([]error, followers)
		for i := range followers {
			tos[i] = logPosition(stream, 7, 7, int64(2000+i))
			batches[i] = Assets(50, codes, uint64(400+10*round+i))
			wg.Go(func() {
				<-ready
				errs[i] = moveWith(t.Context(), s, batches[i], from, tos[i], nil)
			})
		}
		close(ready)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: followers %d and %d both moved from %+v", round, winner, i, from)
			case err == nil:
				winner = i
			case !errors.Is(err, cdnapi.ErrPositionMoved):
				t.Errorf("round %d: follower %d: %v, want nil or ErrPositionMoved", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no follower moved from %+v", round, from)
		}
		for i, batch := range batches {
			want := 0
			if i == winner {
				want = len(batch)
			}
			if n := assetsStored(t, s, batch); n != want {
				t.Errorf("round %d: %d of follower %d's assets are stored, want %d", round, n, i, want)
			}
		}
		checkPosition(t, s, tos[winner], start)
	}
}

// testLogPositionWaits lets a second follower move while the first one's
// Write, which has moved from the same position, is not yet committed. On
// PostgreSQL the second move waits for the first transaction, then sees its
// row and fails; on SQLite the second Write waits for the writer. Either
// way the second fails.
func testLogPositionWaits(t *testing.T, s cdnapi.Store) {
	ctx := t.Context()
	w := Writer(s)
	for _, tt := range []struct {
		name string
		from cdnapi.LogPosition
	}{
		{"from zero", cdnapi.LogPosition{}},
		{"from a stored position", logPosition("held", 3, 4, 10)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream := "held-" + tt.name
			from := tt.from
			if from != (cdnapi.LogPosition{}) {
				from.Stream = stream
				if err := w.MoveLogPosition(ctx, cdnapi.LogPosition{}, from); err != nil {
					t.Fatal(err)
				}
			}
			first, second := logPosition(stream, 3, 4, 20), logPosition(stream, 3, 4, 30)
			secondErr := make(chan error, 1)
			start := time.Now()
			err := s.Write(ctx, func(w cdnapi.Writer) error {
				if err := w.MoveLogPosition(ctx, from, first); err != nil {
					return err
				}
				go func() { secondErr <- Writer(s).MoveLogPosition(ctx, from, second) }()
				// Give the second move time to reach the row (on
				// PostgreSQL) or the writer (on SQLite) and wait there.
				time.Sleep(200 * time.Millisecond)
				return nil
			})
			if err != nil {
				t.Fatalf("the first Write: %v", err)
			}
			if err := <-secondErr; !errors.Is(err, cdnapi.ErrPositionMoved) {
				t.Errorf("the second move = %v, want ErrPositionMoved", err)
			}
			checkPosition(t, s, first, start)
		})
	}
}
