package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// putIncidents opens and resolves n incidents through the store, one an
// hour up to now, the last left open, and returns their IDs newest first.
func putIncidents(t *testing.T, e *env, n int) []string {
	t.Helper()
	ctx := t.Context()
	start := time.Now().UTC().Truncate(time.Second).Add(-time.Duration(n) * time.Hour)
	for i := range n {
		at := start.Add(time.Duration(i) * time.Hour)
		component := cdnapi.Components[i%len(cdnapi.Components)]
		must(t, e.store.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: component,
			Status: cdnapi.StatusPartialOutage, Message: "cable cut", At: at}))
		if i < n-1 {
			must(t, e.store.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: component,
				Status: cdnapi.StatusOperational, At: at.Add(10 * time.Minute)}))
		}
	}
	list, err := e.store.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: n})
	must(t, err)
	ids := make([]string, len(list))
	for i, inc := range list {
		ids[i] = inc.ID
	}
	return ids
}

// TestIncidentsList walks the incidents with several limits: every one
// comes once, newest first, with the list's headers; the open one has a
// null resolved_at.
func TestIncidentsList(t *testing.T) {
	e := newEnv(t, nil)
	ids := putIncidents(t, e, 23)
	for _, limit := range []string{"1", "7", "23", "100", ""} {
		target := "/api/v1/status/incidents"
		if limit != "" {
			target += "?limit=" + limit
		}
		items := e.walk(t, onAPI, target, nil)
		if len(items) != len(ids) {
			t.Fatalf("%s: %d incidents, want %d", target, len(items), len(ids))
		}
		for i, raw := range items {
			var inc struct {
				ID         string  `json:"id"`
				Message    *string `json:"message"`
				ResolvedAt *string `json:"resolved_at"`
			}
			if err := json.Unmarshal(raw, &inc); err != nil {
				t.Fatal(err)
			}
			if inc.ID != ids[i] || (i == 0) != (inc.ResolvedAt == nil) || inc.Message == nil || *inc.Message != "cable cut" {
				t.Fatalf("%s: item %d = %s, want %s, open only first", target, i, raw, ids[i])
			}
		}
	}
	res, _ := e.get(t, onAPI, "/api/v1/status/incidents?limit=2")
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
}

// TestIncidentsErrors: the same validation and errors as the other lists,
// a cursor of another list refused, and 404 on the edge address.
func TestIncidentsErrors(t *testing.T) {
	e := newEnv(t, nil)
	putIncidents(t, e, 5)
	_, body := e.get(t, onAPI, "/api/v1/files?limit=2")
	files := *decode[listBody](t, body).NextCursor
	_, body = e.get(t, onAPI, "/api/v1/status/incidents?limit=2")
	incidents := *decode[listBody](t, body).NextCursor
	for _, tc := range []struct {
		name, on, target string
		status           int
		code, param      string
	}{
		{"zero limit", onAPI, "/api/v1/status/incidents?limit=0", 400, cdnapi.CodeParameterInvalid, "limit"},
		{"limit above 100", onAPI, "/api/v1/status/incidents?limit=101", 400, cdnapi.CodeParameterInvalid, "limit"},
		{"limit with a space", onAPI, "/api/v1/status/incidents?limit=%201", 400, cdnapi.CodeParameterInvalid, "limit"},
		{"limit twice", onAPI, "/api/v1/status/incidents?limit=1&limit=2", 400, cdnapi.CodeParameterInvalid, "limit"},
		{"unknown parameter", onAPI, "/api/v1/status/incidents?region=FRA1", 400, cdnapi.CodeParameterUnknown, "region"},
		{"empty cursor", onAPI, "/api/v1/status/incidents?cursor=", 400, cdnapi.CodeCursorInvalid, "cursor"},
		{"files cursor", onAPI, "/api/v1/status/incidents?cursor=" + files, 400, cdnapi.CodeCursorInvalid, "cursor"},
		{"incidents cursor on files", onAPI, "/api/v1/files?cursor=" + incidents, 400, cdnapi.CodeCursorInvalid, "cursor"},
		{"tampered cursor", onAPI, "/api/v1/status/incidents?cursor=" + incidents + "A", 400, cdnapi.CodeCursorInvalid, "cursor"},
		{"own cursor", onAPI, "/api/v1/status/incidents?cursor=" + incidents, 200, "", ""},
		{"on the edge", onEdge, "/api/v1/status/incidents", 404, cdnapi.CodeNotFound, ""},
		{"uptime takes no parameters", onAPI, "/api/v1/status/uptime?limit=1", 400, cdnapi.CodeParameterUnknown, "limit"},
		{"uptime on the edge", onEdge, "/api/v1/status/uptime", 404, cdnapi.CodeNotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := e.get(t, tc.on, tc.target)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			if tc.code != "" {
				if eb := decode[errorBody](t, body); eb.Error.Code != tc.code || eb.Error.Param != tc.param {
					t.Errorf("error %s (param %q), want %s (%q)", eb.Error.Code, eb.Error.Param, tc.code, tc.param)
				}
			}
		})
	}
	res, _ := e.do(t, onAPI, http.MethodPost, "/api/v1/status/incidents", nil)
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", res.StatusCode)
	}
}

// TestIncidentsStoreDown: with the store closed, the list answers 503
// storage_unavailable, as the other lists do.
func TestIncidentsStoreDown(t *testing.T) {
	e := newEnv(t, nil)
	e.store.Close()
	for _, target := range []string{"/api/v1/status/incidents", "/api/v1/status/uptime"} {
		res, body := e.get(t, onAPI, target)
		if res.StatusCode != http.StatusServiceUnavailable || decode[errorBody](t, body).Error.Code != cdnapi.CodeStorageUnavailable {
			t.Errorf("%s: status %d: %s; want 503 storage_unavailable", target, res.StatusCode, body)
		}
	}
}

// TestUptime: the figures come from the stored incidents, measured from the
// first recorded status.
func TestUptime(t *testing.T) {
	e := newEnv(t, nil) // its evaluator has recorded nothing: no History
	_, body := e.get(t, onAPI, "/api/v1/status/uptime")
	var empty struct {
		MeasuredSince *string `json:"measured_since"`
		Components    []struct {
			Name     string   `json:"name"`
			Uptime30 *float64 `json:"uptime_30d"`
		} `json:"components"`
	}
	must(t, json.Unmarshal(body, &empty))
	if empty.MeasuredSince != nil || len(empty.Components) != 4 || empty.Components[0].Uptime30 != nil {
		t.Fatalf("with no history: %s; want null figures", body)
	}

	ctx := t.Context()
	now := time.Now().UTC()
	since := now.Add(-10 * 24 * time.Hour)
	must(t, e.store.RecordStatusChange(ctx, cdnapi.StatusChange{Kind: cdnapi.SubjectComponent,
		Subject: cdnapi.ComponentStorage, Status: cdnapi.StatusOperational, Source: cdnapi.SourceProbe, At: since}))
	// Storage was down for one day of the ten measured: 90%.
	must(t, e.store.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: cdnapi.ComponentStorage,
		Status: cdnapi.StatusMajorOutage, At: now.Add(-5 * 24 * time.Hour)}))
	must(t, e.store.UpdateIncident(ctx, cdnapi.IncidentUpdate{Component: cdnapi.ComponentStorage,
		Status: cdnapi.StatusOperational, At: now.Add(-4 * 24 * time.Hour)}))
	_, body = e.get(t, onAPI, "/api/v1/status/uptime")
	var got struct {
		MeasuredSince string `json:"measured_since"`
		Components    []struct {
			Name     string  `json:"name"`
			Uptime30 float64 `json:"uptime_30d"`
			Uptime90 float64 `json:"uptime_90d"`
		} `json:"components"`
	}
	must(t, json.Unmarshal(body, &got))
	if got.MeasuredSince != cdnapi.Timestamp(since) {
		t.Errorf("measured_since %s, want %s", got.MeasuredSince, cdnapi.Timestamp(since))
	}
	for _, c := range got.Components {
		want := 100.0
		if c.Name == cdnapi.ComponentStorage {
			want = 90
		}
		if c.Uptime30 < want-0.01 || c.Uptime30 > want+0.01 || c.Uptime90 != c.Uptime30 {
			t.Errorf("%s: uptime %v / %v, want %v for both", c.Name, c.Uptime30, c.Uptime90, want)
		}
	}
}
