package client

import (
	"context"
	"errors"
	"testing"
)

// walk follows the cursors it is given, and refuses one that would fetch
// the same page again.
func TestWalkFollowsCursors(t *testing.T) {
	pages := map[string]Page[int]{
		"":  {Items: []int{1, 2}, HasMore: true, NextCursor: "b"},
		"b": {Items: []int{3}, HasMore: true, NextCursor: "c"},
		"c": {Items: []int{4}, HasMore: true, NextCursor: "c"},
	}
	var got []int
	var walkErr error
	for it, err := range walk(context.Background(), "", func(cursor string) (Page[int], error) { return pages[cursor], nil }) {
		if err != nil {
			walkErr = err
			continue
		}
		got = append(got, it)
	}
	if len(got) != 4 || got[3] != 4 || !errors.Is(walkErr, errSameCursor) {
		t.Errorf("walked %v, error %v; want 1 to 4, then errSameCursor", got, walkErr)
	}
}
