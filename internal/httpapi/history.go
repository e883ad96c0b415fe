package httpapi

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/cdnapi/cdnapi"
)

// This file serves the status history: the incidents list and the uptime.
// The Atom feed of the incidents is in feed.go.

// History reads the status history (API listener only); the stores
// implement it.
type History interface {
	ListIncidents(ctx context.Context, q cdnapi.IncidentQuery) ([]cdnapi.Incident, error)
	cdnapi.UptimeSource
}

// The paths of the status history.
const (
	pathIncidents = "/api/v1/status/incidents"
	pathUptime    = "/api/v1/status/uptime"
)

// incidentsRequest parses requests of GET /api/v1/status/incidents: a page
// of incidents, newest first, with the limit and cursor rules of the other
// lists. Like the status, it is no-store for clients and shared caches, as
// an open incident changes as it goes; the public page cache keeps a page
// for its short TTL.
func incidentsRequest(cfg Config) parseList {
	return func(r *http.Request) (listRequest, error) {
		pq, err := parseIncidentsQuery(r.URL.RawQuery, cfg.Cursors)
		if err != nil {
			return listRequest{}, err
		}
		return pagedRequest(cfg.StoreTimeout, pq, pq.key("incidents", "", false), pagedList[cdnapi.Incident]{
			fetch: func(ctx context.Context, after *cdnapi.Position, limit int) ([]cdnapi.Incident, error) {
				return cfg.History.ListIncidents(ctx, cdnapi.IncidentQuery{After: after, Limit: limit})
			},
			appendItem: appendIncident, cacheControl: cacheStatus, path: pathIncidents,
		}), nil
	}
}

// renderUptime renders GET /api/v1/status/uptime: each component's share
// of time operational over 30 and 90 days, from the stored history.
func renderUptime(cfg Config) render {
	return func(r *http.Request) (*representation, error) {
		if err := parseNoQuery(r.URL.RawQuery); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(r.Context(), cfg.StoreTimeout)
		since, uptime, err := cdnapi.ReadUptime(ctx, cfg.History, time.Now())
		cancel()
		if err != nil {
			return nil, storeError(r, err)
		}
		b := append(make([]byte, 0, 512), `{"object":"uptime","measured_since":`...)
		if since.IsZero() {
			b = append(b, "null"...)
		} else {
			b = appendTime(b, since)
		}
		b = append(b, `,"components":[`...)
		for i, u := range uptime {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = appendString(b, u.Component)
			b = append(b, `,"uptime_30d":`...)
			b = appendPercent(b, u.Short)
			b = append(b, `,"uptime_90d":`...)
			b = appendPercent(b, u.Long)
			b = append(b, '}')
		}
		b = append(b, "]}\n"...)
		return &representation{contentType: "application/json", cacheControl: cacheStatus, body: b}, nil
	}
}

// appendIncident appends i as an item of the incidents list.
func appendIncident(b []byte, i cdnapi.Incident) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, i.ID)
	b = append(b, `,"component":`...)
	b = appendString(b, i.Component)
	b = append(b, `,"status":`...)
	b = appendString(b, string(i.Status))
	b = append(b, `,"message":`...)
	if i.Message == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, i.Message)
	}
	b = append(b, `,"started_at":`...)
	b = appendTime(b, i.StartedAt)
	b = append(b, `,"resolved_at":`...)
	if i.Open() {
		b = append(b, "null"...)
	} else {
		b = appendTime(b, i.ResolvedAt)
	}
	return append(b, '}')
}

// appendPercent appends a percentage with at most three decimals, or null
// for -1 (nothing measured).
func appendPercent(b []byte, p float64) []byte {
	if p < 0 {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, math.Floor(p*1000)/1000, 'f', -1, 64)
}
