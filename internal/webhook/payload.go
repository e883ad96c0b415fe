package webhook

import (
	"encoding/json"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Payload is the JSON body of a delivery (the request body of the
// statusEvent and fileQuarantined webhooks of api/openapi.yaml). Data is
// the incident or the region as the API shows it, or the quarantine.
type Payload struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

type incidentJSON struct {
	ID         string  `json:"id"`
	Component  string  `json:"component"`
	Status     string  `json:"status"`
	Message    *string `json:"message"`
	StartedAt  string  `json:"started_at"`
	ResolvedAt *string `json:"resolved_at"`
}

type regionJSON struct {
	Code    string `json:"code"`
	Name    string `json:"name"`
	Zone    string `json:"zone"`
	Country string `json:"country"`
	Status  string `json:"status"`
}

type quarantineJSON struct {
	Project       string `json:"project"`
	Path          string `json:"path"`
	Bytes         int64  `json:"bytes"`
	Checksum      string `json:"checksum"`
	Signature     string `json:"signature"`
	QuarantinedAt string `json:"quarantined_at"`
}

func timestamp(t time.Time) string { return t.UTC().Truncate(time.Second).Format(cdnapi.TimeLayout) }

// Body returns the JSON body that tells of e. It is the same bytes for
// every attempt, since it depends on the event alone.
func Body(e cdnapi.Event) []byte {
	p := Payload{ID: e.ID, Type: string(e.Type), Timestamp: timestamp(e.At)}
	switch {
	case e.Incident != nil:
		i := e.Incident
		j := incidentJSON{ID: i.ID, Component: i.Component, Status: string(i.Status), StartedAt: timestamp(i.StartedAt)}
		if i.Message != "" {
			j.Message = &i.Message
		}
		if !i.Open() {
			r := timestamp(i.ResolvedAt)
			j.ResolvedAt = &r
		}
		p.Data = j
	case e.Region != nil:
		r := e.Region
		p.Data = regionJSON{Code: r.Code, Name: r.Name, Zone: r.Zone, Country: r.Country, Status: string(r.Status)}
	case e.Quarantine != nil:
		q := e.Quarantine
		p.Data = quarantineJSON{Project: q.Project, Path: q.Path, Bytes: q.Bytes, Checksum: q.Checksum,
			Signature: q.Signature, QuarantinedAt: timestamp(q.At)}
	default:
		p.Data = struct{}{}
	}
	b, _ := json.Marshal(p) // strings, pointers to strings and an int64 only: cannot fail
	return b
}
