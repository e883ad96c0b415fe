package webhook

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/api"
)

// TestBodyMatchesOpenAPI: every kind of event's body matches the request
// body of the document's webhook of its type (statusEvent, or
// fileQuarantined), and a body the schema does not allow is refused, so
// the check can fail.
func TestBodyMatchesOpenAPI(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatal(err)
	}
	schemaOf := func(name string) *openapi3.Schema {
		hook := doc.Webhooks[name]
		if hook == nil || hook.Post == nil {
			t.Fatalf("the document has no %s webhook", name)
		}
		return hook.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	}
	schema, quarantineSchema := schemaOf("statusEvent"), schemaOf("fileQuarantined")
	at := time.Date(2026, 11, 20, 14, 3, 7, 0, time.UTC)
	inc := cdnapi.Incident{ID: "inc_3kTq9ZpW2mXc8RbN0aLs4e", Component: "Storage", Status: cdnapi.StatusMajorOutage, StartedAt: at}
	resolved := inc
	resolved.ResolvedAt, resolved.Message = at.Add(time.Minute), "Disks replaced."
	region := cdnapi.Region{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusPartialOutage}
	updated := inc
	updated.Message = "Failing over to the standby."
	id := "evt_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5f60"
	q := cdnapi.Quarantine{Project: "acme", Path: "uploads/invoice.pdf.exe", Bytes: 68,
		Checksum:  "sha256:275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f",
		Signature: "Eicar-Test-Signature", At: at.Add(-time.Second)}
	events := []cdnapi.Event{
		{ID: id, Type: cdnapi.EventIncidentOpened, At: at, Incident: &inc},
		{ID: id, Type: cdnapi.EventIncidentUpdated, At: at, Incident: &updated},
		{ID: id, Type: cdnapi.EventIncidentResolved, At: at, Incident: &resolved},
		{ID: id, Type: cdnapi.EventRegionChanged, At: at, Region: &region},
		{ID: cdnapi.QuarantineEventID(q.Project, q.Path, q.Checksum), Type: cdnapi.EventFileQuarantined, At: at, Quarantine: &q},
	}
	for _, typ := range cdnapi.EventTypes {
		if !slices.ContainsFunc(events, func(e cdnapi.Event) bool { return e.Type == typ }) {
			t.Errorf("no %s event is checked", typ)
		}
	}
	for _, e := range events {
		var v any
		if err := json.Unmarshal(Body(e), &v); err != nil {
			t.Fatal(err)
		}
		s, other := schema, quarantineSchema
		if e.Type == cdnapi.EventFileQuarantined {
			s, other = quarantineSchema, schema
		}
		if err := s.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: %s does not match: %v", e.Type, Body(e), err)
		}
		// Neither webhook takes the other's events.
		if other.VisitJSON(v, openapi3.EnableJSONSchema2020()) == nil {
			t.Errorf("%s: %s matches the other webhook's schema too", e.Type, Body(e))
		}
	}
	var bad any
	json.Unmarshal([]byte(`{"id":"evt_x","type":"incident.exploded","timestamp":"yesterday","data":{}}`), &bad)
	if schema.VisitJSON(bad, openapi3.EnableJSONSchema2020()) == nil {
		t.Error("a malformed body matches the schema")
	}
	// A quarantine without its checksum's prefix is refused too.
	json.Unmarshal([]byte(`{"id":"evt_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5f60","type":"file.quarantined","timestamp":"2026-11-20T14:03:07Z",`+
		`"data":{"project":"acme","path":"a","bytes":1,"checksum":"abc","signature":"x","quarantined_at":"2026-11-20T14:03:07Z"}}`), &bad)
	if quarantineSchema.VisitJSON(bad, openapi3.EnableJSONSchema2020()) == nil {
		t.Error("a malformed quarantine matches the schema")
	}
}

// TestQuarantineBody: the body of a file.quarantined event is the envelope
// of the others with the quarantine as data, its time in whole seconds.
func TestQuarantineBody(t *testing.T) {
	q := cdnapi.Quarantine{Project: "acme", Path: "uploads/a.exe", Bytes: 68,
		Checksum:  "sha256:275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f",
		Signature: "Eicar-Test-Signature", At: time.Date(2026, 11, 20, 14, 3, 6, 900e6, time.UTC)}
	e := cdnapi.Event{ID: "evt_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5f60", Type: cdnapi.EventFileQuarantined,
		At: time.Date(2026, 11, 20, 14, 3, 7, 0, time.UTC), Quarantine: &q}
	want := `{"id":"evt_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5f60","type":"file.quarantined","timestamp":"2026-11-20T14:03:07Z",` +
		`"data":{"project":"acme","path":"uploads/a.exe","bytes":68,` +
		`"checksum":"sha256:275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f",` +
		`"signature":"Eicar-Test-Signature","quarantined_at":"2026-11-20T14:03:06Z"}}`
	if got := string(Body(e)); got != want {
		t.Errorf("Body =\n%s\nwant\n%s", got, want)
	}
}
