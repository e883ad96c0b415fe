package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/storetest"
)

// walk follows next_cursor from the first page of target (a list path with
// a query) to the last, over loopback HTTP, and returns the items in the
// order received. between, if not nil, runs after each page. It checks that
// the Link header and next_cursor agree on every page.
func (e *env) walk(t *testing.T, on, target string, between func(page int)) []json.RawMessage {
	t.Helper()
	var items []json.RawMessage
	next := target
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatalf("%s: the walk does not end", target)
		}
		res, body := e.get(t, on, next)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d: %s", next, res.StatusCode, body)
		}
		p := decode[listBody](t, body)
		items = append(items, p.Data...)
		if !p.HasMore {
			return items
		}
		link := res.Header.Get("Link")
		want := "<" + linkTarget(target, *p.NextCursor) + `>; rel="next"`
		if link != want {
			t.Fatalf("Link %s, want %s", link, want)
		}
		next = link[1:strings.IndexByte(link, '>')]
		if between != nil {
			between(page)
		}
	}
}

// linkTarget is the next-page URL the handlers promise: the request's path,
// its limit (the default spelled out) and region, and the cursor.
func linkTarget(target, cursor string) string {
	u, _ := url.Parse(target)
	q := u.Query()
	limit := q.Get("limit")
	if limit == "" {
		limit = strconv.Itoa(cdnapi.DefaultLimit)
	}
	s := u.Path + "?limit=" + limit
	if r := q.Get("region"); r != "" {
		s += "&region=" + r
	}
	return s + "&cursor=" + cursor
}

// TestWalkEveryLimit walks the files with every limit from 1 to 100, and
// the assets of one region and of all with a few limits: every row comes
// exactly once, in list order.
func TestWalkEveryLimit(t *testing.T) {
	e := newEnv(t, nil)
	wantFiles := make([]string, len(e.files))
	for i, f := range e.files {
		wantFiles[i] = string(appendFile(nil, f))
	}
	for limit := 1; limit <= cdnapi.MaxLimit; limit++ {
		got := e.walk(t, onAPI, "/api/v1/files?limit="+strconv.Itoa(limit), nil)
		sameItems(t, "files limit "+strconv.Itoa(limit), got, wantFiles)
	}
	sameItems(t, "files default limit", e.walk(t, onAPI, "/api/v1/files", nil), wantFiles)

	for _, region := range []string{"", "FRA1", "SYD1"} {
		var want []string
		for _, a := range e.assets {
			if region == "" || a.Region == region {
				want = append(want, string(appendAsset(nil, a)))
			}
		}
		for _, limit := range []int{1, 7, 20, 100} {
			target := "/api/v1/assets?limit=" + strconv.Itoa(limit)
			if region != "" {
				target += "&region=" + region
			}
			sameItems(t, target, e.walk(t, onEdge, target, nil), want)
		}
	}
}

func asRaw(items []string) []json.RawMessage {
	raw := make([]json.RawMessage, len(items))
	for i, s := range items {
		raw[i] = json.RawMessage(s)
	}
	return raw
}

func sameItems(t *testing.T, what string, got []json.RawMessage, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, want %d", what, len(got), len(want))
	}
	for i := range got {
		if string(got[i]) != want[i] {
			t.Fatalf("%s: item %d is %s, want %s", what, i, got[i], want[i])
		}
	}
}

// TestWalkWhileInserting inserts files while walks are under way, on each
// of their first pages: newer than every row, older than every row, and
// tying the oldest row's created_at with IDs that sort before and after
// it. The rows that existed when the walk began each come exactly once, in
// order, and no row comes twice.
func TestWalkWhileInserting(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	newest, oldest := e.files[0].CreatedAt, e.files[len(e.files)-1].CreatedAt
	const insertPages = 4
	existing := slices.Clone(e.files) // the rows in the store when a walk begins, in list order
	for _, limit := range []int{1, 3, 10, 50} {
		inserted := map[string]bool{}
		var added []cdnapi.File
		between := func(page int) {
			if page >= insertPages {
				return
			}
			var batch []cdnapi.File
			for i, at := range []time.Time{newest.Add(time.Hour), oldest.Add(-time.Hour), oldest, oldest} {
				f := e.files[0]
				// "fil_0…" sorts before every fixture ID, "fil_zz…" after.
				prefix := "fil_0new"
				if i == 3 {
					prefix = "fil_zznew"
				}
				f.ID = prefix + strconv.Itoa(limit) + "x" + strconv.Itoa(page) + "x" + strconv.Itoa(i)
				f.CreatedAt = at
				inserted[f.ID] = true
				batch = append(batch, f)
				added = append(added, f)
			}
			must(t, storetest.Writer(e.store).PutFiles(ctx, batch))
		}
		got := e.walk(t, onAPI, "/api/v1/files?limit="+strconv.Itoa(limit), between)
		seen := map[string]int{}
		var old []string
		for i, raw := range got {
			var f struct{ ID string }
			must(t, json.Unmarshal(raw, &f))
			if prev, dup := seen[f.ID]; dup {
				t.Fatalf("limit %d: %s at %d and at %d", limit, f.ID, prev, i)
			}
			seen[f.ID] = i
			if !inserted[f.ID] {
				old = append(old, string(raw))
			}
		}
		want := make([]string, len(existing))
		for i, f := range existing {
			want[i] = string(appendFile(nil, f))
		}
		sameItems(t, "rows that existed, limit "+strconv.Itoa(limit), asRaw(old), want)
		// Rows inserted ahead of the walk are shown once, like any other.
		if len(got) == len(old) {
			t.Errorf("limit %d: none of the rows inserted ahead of the walk came", limit)
		}
		existing = append(existing, added...)
		storetest.SortFiles(existing)
	}
}

// TestCursorRefused checks that a cursor works only on its own list with
// its own filter, and that changing any one character of it, at every
// position, gets 400 cursor_invalid.
func TestCursorRefused(t *testing.T) {
	e := newEnv(t, nil)
	cursorOf := func(on, target string) string {
		_, body := e.get(t, on, target)
		p := decode[listBody](t, body)
		if p.NextCursor == nil {
			t.Fatalf("%s has no next page", target)
		}
		return *p.NextCursor
	}
	files := cursorOf(onAPI, "/api/v1/files?limit=2")
	assets := cursorOf(onEdge, "/api/v1/assets?limit=2")
	fra := cursorOf(onEdge, "/api/v1/assets?limit=2&region=FRA1")

	for _, tc := range []struct {
		name, on, target string
		status           int
	}{
		{"files cursor on files", onAPI, "/api/v1/files?cursor=" + files, 200},
		{"assets cursor on assets", onEdge, "/api/v1/assets?cursor=" + assets, 200},
		{"region cursor on its region", onEdge, "/api/v1/assets?region=FRA1&cursor=" + fra, 200},
		{"files cursor on assets", onEdge, "/api/v1/assets?cursor=" + files, 400},
		{"assets cursor on files", onAPI, "/api/v1/files?cursor=" + assets, 400},
		{"all-regions cursor with a region", onEdge, "/api/v1/assets?region=FRA1&cursor=" + assets, 400},
		{"region cursor without the region", onEdge, "/api/v1/assets?cursor=" + fra, 400},
		{"region cursor with another region", onEdge, "/api/v1/assets?region=IAD1&cursor=" + fra, 400},
		{"padded", onAPI, "/api/v1/files?cursor=" + files + "%3D", 400},
		{"truncated", onAPI, "/api/v1/files?cursor=" + files[:len(files)-1], 400},
		{"extended", onAPI, "/api/v1/files?cursor=" + files + "A", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := e.get(t, tc.on, tc.target)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			if tc.status == 400 {
				if eb := decode[errorBody](t, body); eb.Error.Code != cdnapi.CodeCursorInvalid || eb.Error.Param != "cursor" {
					t.Errorf("error %s (param %q), want cursor_invalid (cursor)", eb.Error.Code, eb.Error.Param)
				}
			}
		})
	}

	// Every single-character change, at every position, with two
	// replacements each: the next character of the alphabet, and the one
	// that differs in the lowest bit the decoder keeps. Sent through the
	// full handler in process: there are hundreds.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for _, c := range []struct{ on, path, cursor string }{
		{onAPI, "/api/v1/files?cursor=", files},
		{onEdge, "/api/v1/assets?region=FRA1&cursor=", fra},
	} {
		for i := range len(c.cursor) {
			k := strings.IndexByte(alphabet, c.cursor[i])
			for _, r := range []byte{alphabet[(k+1)%64], alphabet[k^1]} {
				changed := c.cursor[:i] + string(r) + c.cursor[i+1:]
				res, body := e.serve(t, c.on, http.MethodGet, c.path+changed, nil)
				if res.StatusCode != http.StatusBadRequest {
					t.Fatalf("%s with position %d changed to %c: status %d: %s", c.path, i, r, res.StatusCode, body)
				}
			}
		}
	}
}
