package httpapi

import (
	"net/url"
	"strings"

	"github.com/cdnapi/cdnapi"
)

// param is one query parameter an endpoint may accept, as a bit of a set.
type param uint8

const (
	paramLimit param = 1 << iota
	paramRegion
	paramCursor
)

// paramNames lists the parameters in the order their values are checked and
// named in messages.
var paramNames = []struct {
	p    param
	name string
}{{paramLimit, "limit"}, {paramRegion, "region"}, {paramCursor, "cursor"}}

// queryValues holds the value of each parameter given, at most one each.
type queryValues struct {
	given                 param
	limit, region, cursor string
}

// has reports whether p was given.
func (q *queryValues) has(p param) bool { return q.given&p != 0 }

// errMalformedQuery is the answer to a query string that cannot be decoded.
var errMalformedQuery = cdnapi.Errorf(cdnapi.CodeParameterInvalid, "",
	"the query string is malformed; percent-encode every reserved character, including %% and ;")

// splitQuery reads a raw query string of an endpoint that accepts the
// parameters in accepts. It fails, with the first fault in the order of the
// pairs, on a pair that cannot be decoded, an unknown parameter and a
// parameter given twice. It checks no values.
//
// It reads the pairs itself rather than with url.ParseQuery: that needs a map,
// and its errors come in no fixed order when there are several faults.
func splitQuery(raw string, accepts param) (queryValues, error) {
	var q queryValues
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue // "a=1&&b=2" is well-formed, as url.ParseQuery reads it
		}
		if strings.Contains(pair, ";") {
			return q, errMalformedQuery // as url.ParseQuery refuses it
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return q, errMalformedQuery
		}
		p := lookupParam(key)
		if p&accepts == 0 {
			return q, unknownParam(key, accepts)
		}
		if q.has(p) {
			return q, cdnapi.Errorf(cdnapi.CodeParameterInvalid, key, "%s must be given at most once", key)
		}
		q.given |= p
		switch p {
		case paramLimit:
			q.limit = value
		case paramRegion:
			q.region = value
		case paramCursor:
			q.cursor = value
		}
	}
	return q, nil
}

// lookupParam returns the param called name, or 0.
func lookupParam(name string) param {
	for _, pn := range paramNames {
		if pn.name == name {
			return pn.p
		}
	}
	return 0
}

// unknownParam returns the parameter_unknown error for key. The key is named
// as the param only when it looks like a parameter name, so that arbitrary
// client input is never echoed back; the message lists what the endpoint
// does take.
func unknownParam(key string, accepts param) *cdnapi.Error {
	var names []string
	for _, pn := range paramNames {
		if accepts&pn.p != 0 {
			names = append(names, pn.name)
		}
	}
	msg := "this endpoint takes no query parameters"
	switch len(names) {
	case 0:
	case 1:
		msg = "unknown query parameter; this endpoint takes only " + names[0]
	default:
		msg = "unknown query parameter; this endpoint takes only " +
			strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	if !plausibleParamName(key) {
		key = ""
	}
	return cdnapi.Errorf(cdnapi.CodeParameterUnknown, key, "%s", msg)
}

// plausibleParamName reports whether s is 1 to 64 of [A-Za-z0-9_.-], the
// shape of a parameter name that is safe to show back to the client in an
// error's param and message.
func plausibleParamName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// parseNoQuery checks the query string of an endpoint that takes no
// parameters.
func parseNoQuery(raw string) error {
	_, err := splitQuery(raw, 0)
	return err
}

// parseLimit returns the limit of q: its given value, checked, or the
// default.
func parseLimit(q *queryValues) (int, error) {
	if !q.has(paramLimit) {
		return cdnapi.DefaultLimit, nil
	}
	return parseLimitValue(q.limit)
}

// parseLimitValue parses a given value of the limit parameter. Only a plain
// decimal integer from 1 to cdnapi.MaxLimit is accepted: ASCII digits only,
// no sign, no spaces, no fraction. Leading zeros are allowed ("05" is 5): the
// value is a decimal integer, and the page cache keys on the parsed number,
// so every spelling of one limit shares one cached page.
func parseLimitValue(s string) (int, error) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, errLimit
		}
		n = n*10 + int(c-'0')
		if n > cdnapi.MaxLimit {
			return 0, errLimit // stops long inputs before they can overflow
		}
	}
	if n < 1 {
		return 0, errLimit // also the empty string
	}
	return n, nil
}

var errLimit = cdnapi.Errorf(cdnapi.CodeParameterInvalid, "limit",
	"limit must be an integer from 1 to %d", cdnapi.MaxLimit)

// parseRegionValue checks a given value of the region parameter of the assets
// list. It checks only the shape; whether the region exists is the store's to
// say.
func parseRegionValue(s string) (string, error) {
	if !cdnapi.ValidRegionCode(s) {
		return "", errRegion
	}
	return s, nil
}

var errRegion = cdnapi.Errorf(cdnapi.CodeParameterInvalid, "region",
	"region must be a region code of three upper-case letters and a digit, such as FRA1")

// parsePageQuery reads the query string of a paged list: limit and cursor,
// and the list's own parameters in accepts. splitQuery's faults come
// first, then a bad limit; filter then checks the list's own parameters
// and returns the cursors of the list under them, which the cursor is
// decoded with and checked against last. Every error is a *cdnapi.Error
// with a 400 code.
func parsePageQuery(raw string, accepts param, filter func(*queryValues) (cdnapi.ListCursors, error)) (pageQuery, error) {
	var pq pageQuery
	q, err := splitQuery(raw, paramLimit|paramCursor|accepts)
	if err != nil {
		return pq, err
	}
	if pq.limit, err = parseLimit(&q); err != nil {
		return pq, err
	}
	if pq.cursors, err = filter(&q); err != nil {
		return pq, err
	}
	if q.has(paramCursor) {
		pos, err := pq.cursors.Decode(q.cursor)
		if err != nil {
			return pq, err
		}
		pq.after = &pos
	}
	return pq, nil
}

// unfiltered is the filter of parsePageQuery for a list that takes no
// parameters of its own: its cursors are c.
func unfiltered(c cdnapi.ListCursors) func(*queryValues) (cdnapi.ListCursors, error) {
	return func(*queryValues) (cdnapi.ListCursors, error) { return c, nil }
}

// parseFilesQuery reads the query string of GET /api/v1/files for the
// current project: limit and cursor, the cursor bound to the files list and
// to project.
func parseFilesQuery(raw string, cursors *cdnapi.CursorCodec, project string) (pageQuery, error) {
	return parsePageQuery(raw, 0, unfiltered(cursors.Files(project)))
}

// parseAssetsQuery reads the query string of GET /api/v1/assets: limit,
// region and cursor, the cursor bound to the assets list and to the region
// (or to "" when none is given), which it returns too. It checks the
// region's shape only; whether it exists is the store's to say.
func parseAssetsQuery(raw string, cursors *cdnapi.CursorCodec) (pq pageQuery, region string, err error) {
	pq, err = parsePageQuery(raw, paramRegion, func(q *queryValues) (cdnapi.ListCursors, error) {
		if q.has(paramRegion) {
			var err error
			if region, err = parseRegionValue(q.region); err != nil {
				return cdnapi.ListCursors{}, err
			}
		}
		return cursors.Assets(region), nil
	})
	return pq, region, err
}

// parseIncidentsQuery reads the query string of the incidents list: limit
// and cursor, the cursor bound to the incidents list.
func parseIncidentsQuery(raw string, cursors *cdnapi.CursorCodec) (pageQuery, error) {
	return parsePageQuery(raw, 0, unfiltered(cursors.Incidents()))
}
