package httpapi

import (
	"iter"
	"maps"
	"net/http"
	"strconv"
)

func itoa(n int) string { return strconv.Itoa(n) }

// mergeKeys yields the names of both headers.
func mergeKeys(a, b http.Header) iter.Seq[string] {
	m := maps.Clone(a)
	maps.Copy(m, b)
	return maps.Keys(m)
}
