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
// body of the document's statusEvent webhook, and a body the schema does
// not allow is refused, so the check can fail.
func TestBodyMatchesOpenAPI(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatal(err)
	}
	hook := doc.Webhooks["statusEvent"]
	if hook == nil || hook.Post == nil {
		t.Fatal("the document has no statusEvent webhook")
	}
	schema := hook.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	at := time.Date(2026, 11, 20, 14, 3, 7, 0, time.UTC)
	inc := cdnapi.Incident{ID: "inc_3kTq9ZpW2mXc8RbN0aLs4e", Component: "Storage", Status: cdnapi.StatusMajorOutage, StartedAt: at}
	resolved := inc
	resolved.ResolvedAt, resolved.Message = at.Add(time.Minute), "Disks replaced."
	region := cdnapi.Region{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Country: "DE", Status: cdnapi.StatusPartialOutage}
	updated := inc
	updated.Message = "Failing over to the standby."
	id := "evt_5f0c1a9e2b7d4c3e8a6f1b2c3d4e5f60"
	events := []cdnapi.Event{
		{ID: id, Type: cdnapi.EventIncidentOpened, At: at, Incident: &inc},
		{ID: id, Type: cdnapi.EventIncidentUpdated, At: at, Incident: &updated},
		{ID: id, Type: cdnapi.EventIncidentResolved, At: at, Incident: &resolved},
		{ID: id, Type: cdnapi.EventRegionChanged, At: at, Region: &region},
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
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: %s does not match: %v", e.Type, Body(e), err)
		}
	}
	var bad any
	json.Unmarshal([]byte(`{"id":"evt_x","type":"incident.exploded","timestamp":"yesterday","data":{}}`), &bad)
	if schema.VisitJSON(bad, openapi3.EnableJSONSchema2020()) == nil {
		t.Error("a malformed body matches the schema")
	}
}
