package httpapi

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// Atom as RFC 4287 defines it, read strictly: every element in the Atom
// namespace, anything else collected in Unknown to be reported.
type rfcFeed struct {
	XMLName xml.Name   `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string     `xml:"http://www.w3.org/2005/Atom id"`
	Title   string     `xml:"http://www.w3.org/2005/Atom title"`
	Updated string     `xml:"http://www.w3.org/2005/Atom updated"`
	Authors []rfcName  `xml:"http://www.w3.org/2005/Atom author"`
	Links   []rfcLink  `xml:"http://www.w3.org/2005/Atom link"`
	Entries []rfcEntry `xml:"http://www.w3.org/2005/Atom entry"`
	Unknown []xml.Name `xml:",any"`
}

type rfcName struct {
	Name string `xml:"http://www.w3.org/2005/Atom name"`
}

type rfcLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr"`
	Href string `xml:"href,attr"`
}

type rfcEntry struct {
	ID        string    `xml:"http://www.w3.org/2005/Atom id"`
	Title     string    `xml:"http://www.w3.org/2005/Atom title"`
	Updated   string    `xml:"http://www.w3.org/2005/Atom updated"`
	Published string    `xml:"http://www.w3.org/2005/Atom published"`
	Links     []rfcLink `xml:"http://www.w3.org/2005/Atom link"`
	Summary   string    `xml:"http://www.w3.org/2005/Atom summary"`
	Category  []struct {
		Term string `xml:"term,attr"`
	} `xml:"http://www.w3.org/2005/Atom category"`
	Unknown []xml.Name `xml:",any"`
}

// checkAtom parses body and checks what RFC 4287 requires of a feed and its
// entries (4.1.1, 4.1.2): one id (an IRI), title and updated (an RFC 3339
// date) each; an author on the feed, since entries have none; a link
// rel="alternate" on each entry, which has no content.
func checkAtom(t *testing.T, body []byte) rfcFeed {
	t.Helper()
	var f rfcFeed
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = true
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("the feed does not parse: %v\n%s", err, body)
	}
	if !bytes.HasPrefix(body, []byte(`<?xml version="1.0" encoding="UTF-8"?>`)) {
		t.Errorf("no XML declaration: %.60s", body)
	}
	if len(f.Unknown) > 0 {
		t.Errorf("elements outside the feed's model: %v", f.Unknown)
	}
	date := func(what, s string) {
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			t.Errorf("%s %q is not an RFC 3339 date", what, s)
		}
	}
	if !strings.HasPrefix(f.ID, "urn:") || f.Title == "" || len(f.Authors) != 1 || f.Authors[0].Name == "" {
		t.Errorf("feed id %q, title %q, authors %v", f.ID, f.Title, f.Authors)
	}
	date("feed updated", f.Updated)
	rels := map[string]string{}
	for _, l := range f.Links {
		rels[l.Rel] = l.Href
	}
	if rels["self"] != pathIncidentsFeed || rels["alternate"] != "/status" {
		t.Errorf("feed links %v", f.Links)
	}
	ids := map[string]bool{}
	for i, e := range f.Entries {
		if !strings.HasPrefix(e.ID, "urn:cdnapi:incident:inc_") || ids[e.ID] || e.Title == "" || len(e.Unknown) > 0 {
			t.Errorf("entry %d: id %q, title %q, unknown %v", i, e.ID, e.Title, e.Unknown)
		}
		ids[e.ID] = true
		date("entry updated", e.Updated)
		date("entry published", e.Published)
		if len(e.Links) != 1 || e.Links[0].Rel != "alternate" || e.Links[0].Href == "" {
			t.Errorf("entry %d links %v", i, e.Links)
		}
	}
	return f
}

// TestIncidentsFeed: the feed holds the incidents newest first as Atom
// entries, one per incident, a resolution updating its entry, a message
// with markup escaped; the feed's updated is its newest change.
func TestIncidentsFeed(t *testing.T) {
	e := newEnv(t, nil)
	res, body := e.get(t, onAPI, pathIncidentsFeed)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != contentTypeAtom {
		t.Fatalf("empty feed: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if f := checkAtom(t, body); len(f.Entries) != 0 || f.Updated != "1970-01-01T00:00:00Z" {
		t.Errorf("empty feed: %d entries, updated %s", len(f.Entries), f.Updated)
	}

	ids := putIncidents(t, e, 3)
	start := time.Now().UTC().Truncate(time.Second).Add(-90 * time.Minute)
	const message = `Fibre <cut> & "rerouted"`
	must(t, e.store.UpdateIncident(t.Context(), cdnapi.IncidentUpdate{Component: "Region FRA1",
		Status: cdnapi.StatusMajorOutage, Message: message, At: start}))
	must(t, e.store.UpdateIncident(t.Context(), cdnapi.IncidentUpdate{Component: "Region FRA1",
		Status: cdnapi.StatusOperational, At: start.Add(30 * time.Minute)}))
	res, body = e.get(t, onAPI, pathIncidentsFeed)
	if res.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", res.Header.Get("Cache-Control"))
	}
	f := checkAtom(t, body)
	if len(f.Entries) != 4 {
		t.Fatalf("%d entries, want 4", len(f.Entries))
	}
	// The region's incident started 90 minutes ago, between the others'
	// (3, 2 and 1 hours ago): it is second, after the open one of putIncidents.
	if f.Entries[0].ID != "urn:cdnapi:incident:"+ids[0] || strings.Contains(f.Entries[0].Title, "resolved") {
		t.Errorf("first entry %+v, want the open incident %s", f.Entries[0], ids[0])
	}
	fra := f.Entries[1]
	if fra.Title != "Region FRA1: major outage (resolved)" || !strings.HasSuffix(fra.Summary, message) ||
		fra.Updated != cdnapi.Timestamp(start.Add(30*time.Minute)) || fra.Published != cdnapi.Timestamp(start) ||
		fra.Category[0].Term != "major_outage" {
		t.Errorf("the region's entry %+v", fra)
	}
	if !bytes.Contains(body, []byte("Fibre &lt;cut&gt; &amp;")) {
		t.Errorf("the message is not escaped: %s", body)
	}
	newest := f.Entries[0].Updated
	for _, en := range f.Entries {
		newest = max(newest, en.Updated) // RFC 3339 in UTC sorts as text
	}
	if f.Updated != newest {
		t.Errorf("feed updated %s, want the newest entry's %s", f.Updated, newest)
	}

	res, _ = e.do(t, onAPI, http.MethodGet, pathIncidentsFeed, hdr("If-None-Match", res.Header.Get("ETag")))
	if res.StatusCode != http.StatusNotModified {
		t.Errorf("conditional GET = %d, want 304", res.StatusCode)
	}
	if res, _ := e.get(t, onAPI, pathIncidentsFeed+"?limit=2"); res.StatusCode != 400 {
		t.Errorf("with a parameter: %d, want 400", res.StatusCode)
	}
	if res, _ := e.get(t, onEdge, pathIncidentsFeed); res.StatusCode != 404 {
		t.Errorf("on the edge: %d, want 404", res.StatusCode)
	}
}

// TestStatusPageLinksFeed: /status names the feed in its head, where feed
// readers look.
func TestStatusPageLinksFeed(t *testing.T) {
	e := newEnv(t, nil)
	res, err := e.client.Get(e.apiURL + "/status") // a page, outside the OpenAPI document
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	head, _, _ := strings.Cut(string(body), "</head>")
	if !strings.Contains(head, `<link rel="alternate" type="application/atom+xml" title="cdnapi incidents" href="`+pathIncidentsFeed+`">`) {
		t.Errorf("the head of /status has no alternate link to the feed: %s", head)
	}
}
