package httpapi

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/nodetest"
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
//
// Every link and id is an absolute URL under base, as there is no xml:base
// to resolve a relative one against.
func checkAtom(t *testing.T, body []byte, base string) rfcFeed {
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
	if f.ID != base+pathIncidentsFeed || f.Title == "" || len(f.Authors) != 1 || f.Authors[0].Name == "" {
		t.Errorf("feed id %q, title %q, authors %v", f.ID, f.Title, f.Authors)
	}
	date("feed updated", f.Updated)
	rels := map[string]string{}
	for _, l := range f.Links {
		rels[l.Rel] = l.Href
	}
	if rels["self"] != base+pathIncidentsFeed || rels["alternate"] != base+"/status" {
		t.Errorf("feed links %v", f.Links)
	}
	ids := map[string]bool{}
	for i, e := range f.Entries {
		if !strings.HasPrefix(e.ID, base+"/status#inc_") || ids[e.ID] || e.Title == "" || len(e.Unknown) > 0 {
			t.Errorf("entry %d: id %q, title %q, unknown %v", i, e.ID, e.Title, e.Unknown)
		}
		ids[e.ID] = true
		date("entry updated", e.Updated)
		date("entry published", e.Published)
		if len(e.Links) != 1 || e.Links[0].Rel != "alternate" || e.Links[0].Href != e.ID {
			t.Errorf("entry %d links %v", i, e.Links)
		}
	}
	return f
}

// TestIncidentsFeed: the feed holds the incidents newest first as Atom
// entries, one per incident, a resolution updating its entry, a message
// with markup escaped; the feed's updated is its newest change.
func TestIncidentsFeed(t *testing.T) {
	before := time.Now().UTC().Truncate(time.Second)
	e := newEnv(t, nil)
	res, body := e.get(t, onAPI, pathIncidentsFeed)
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != contentTypeAtom {
		t.Fatalf("empty feed: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// An empty feed changed last when the server began to serve it.
	if f := checkAtom(t, body, e.apiURL); len(f.Entries) != 0 || f.Updated < cdnapi.Timestamp(before) ||
		f.Updated > cdnapi.Timestamp(time.Now()) {
		t.Errorf("empty feed: %d entries, updated %s, want from %s to now", len(f.Entries), f.Updated, cdnapi.Timestamp(before))
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
	f := checkAtom(t, body, e.apiURL)
	if len(f.Entries) != 4 {
		t.Fatalf("%d entries, want 4", len(f.Entries))
	}
	// The region's incident started 90 minutes ago, between the others'
	// (3, 2 and 1 hours ago): it is second, after the open one of putIncidents.
	if f.Entries[0].ID != e.apiURL+"/status#"+ids[0] || strings.Contains(f.Entries[0].Title, "resolved") {
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

// TestIncidentsFeedOpenIncidentMoves: an open incident's entry, and the
// feed, are updated when it reaches a worse status or takes a message (the
// changes incident.updated tells webhooks of), and not when it is only
// reported again.
func TestIncidentsFeedOpenIncidentMoves(t *testing.T) {
	e := newEnv(t, nil)
	start := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	entry := func() (rfcFeed, string) {
		t.Helper()
		res, body := e.get(t, onAPI, pathIncidentsFeed)
		f := checkAtom(t, body, e.apiURL)
		if len(f.Entries) != 1 {
			t.Fatalf("%d entries, want 1", len(f.Entries))
		}
		return f, res.Header.Get("ETag")
	}
	update := func(s cdnapi.Status, message string, at time.Time) {
		must(t, e.store.UpdateIncident(t.Context(), cdnapi.IncidentUpdate{Component: "CDN", Status: s, Message: message, At: at}))
	}
	update(cdnapi.StatusDegradedPerformance, "", start)
	f, tag := entry()
	for i, step := range []struct {
		status  cdnapi.Status
		message string
		at      time.Time
		updated time.Time
	}{
		{cdnapi.StatusDegradedPerformance, "", start.Add(10 * time.Minute), start},                               // reported again
		{cdnapi.StatusMajorOutage, "", start.Add(20 * time.Minute), start.Add(20 * time.Minute)},                 // worse
		{cdnapi.StatusDegradedPerformance, "Rerouted", start.Add(30 * time.Minute), start.Add(30 * time.Minute)}, // a message
		{cdnapi.StatusDegradedPerformance, "Rerouted", start.Add(40 * time.Minute), start.Add(30 * time.Minute)}, // the same one
		{cdnapi.StatusOperational, "", start.Add(50 * time.Minute), start.Add(50 * time.Minute)},                 // resolved
	} {
		update(step.status, step.message, step.at)
		g, gtag := entry()
		want := cdnapi.Timestamp(step.updated)
		if g.Entries[0].Updated != want || g.Updated != want || g.Entries[0].Published != cdnapi.Timestamp(start) {
			t.Errorf("step %d: entry updated %s, feed updated %s, published %s; want %s", i,
				g.Entries[0].Updated, g.Updated, g.Entries[0].Published, want)
		}
		if moved := g.Entries[0].Updated != f.Entries[0].Updated; moved != (gtag != tag) {
			t.Errorf("step %d: updated moved %v, ETag %s then %s", i, moved, tag, gtag)
		}
		f, tag = g, gtag
	}
}

// TestIncidentsFeedBaseURL: with a public URL, every link and id starts
// with it, whatever Host the request named; without one, with the scheme
// and Host of each request, cached apart, so no reader gets another's.
func TestIncidentsFeedBaseURL(t *testing.T) {
	get := func(t *testing.T, e *env, host string) []byte {
		t.Helper()
		req := e.newRequest(t, onAPI, http.MethodGet, pathIncidentsFeed, nil)
		req.Host = host
		res, err := e.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 {
			t.Fatalf("Host %s: %d %s", host, res.StatusCode, body)
		}
		return body
	}
	t.Run("public URL", func(t *testing.T) {
		e := newEnv(t, func(cfg *Config) { cfg.PublicURL, cfg.PageCacheTTL = "https://status.example.com/", time.Minute })
		putIncidents(t, e, 2)
		for _, host := range []string{"status.example.com", "10.0.0.7:8080"} {
			f := checkAtom(t, get(t, e, host), "https://status.example.com")
			if len(f.Entries) != 2 {
				t.Errorf("Host %s: %d entries", host, len(f.Entries))
			}
		}
	})
	t.Run("Host", func(t *testing.T) {
		e := newEnv(t, func(cfg *Config) { cfg.PageCacheTTL = time.Minute })
		putIncidents(t, e, 2)
		for _, host := range []string{"a.test:8080", "b.test", "a.test:8080"} {
			checkAtom(t, get(t, e, host), "http://"+host)
		}
	})
}

// TestIndexLinksFeed: / names the feed in its head, where feed readers
// look, and lists it among the endpoints.
func TestIndexLinksFeed(t *testing.T) {
	e := newEnv(t, nil)
	res, err := e.client.Get(e.apiURL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	head, main, _ := strings.Cut(string(body), "</head>")
	if !strings.Contains(head, `<link rel="alternate" type="application/atom+xml" title="cdnapi incidents" href="`+pathIncidentsFeed+`">`) ||
		!strings.Contains(main, `<a href="`+pathIncidentsFeed+`">`) {
		t.Errorf("/ does not link the feed: %s", body)
	}
}

// feedReader reads an Atom document from standard input with feedparser
// in its strict mode (sax's strict XML parser), given no URL to resolve
// relative links against, and prints what a reader would show as JSON.
const feedReader = `
const FeedParser = require("feedparser");
const chunks = [];
process.stdin.on("data", (c) => chunks.push(c));
process.stdin.on("end", () => {
  const fp = new FeedParser({ strict: true });
  const items = [];
  fp.on("error", (e) => { console.error(e.message); process.exit(1); });
  fp.on("readable", () => { let i; while ((i = fp.read())) items.push({ guid: i.guid, link: i.link, date: i.date, published: i.pubdate, title: i.title }); });
  fp.on("end", () => {
    const m = fp.meta;
    console.log(JSON.stringify({ type: m["#type"], title: m.title, link: m.link, self: m.xmlurl, date: m.date, items }));
  });
  fp.end(Buffer.concat(chunks));
});
`

// TestIncidentsFeedReader: feedparser, one of the readers people use,
// reads the feed in its strict mode, and gives back the absolute links,
// the ids and the dates the feed holds, with no base URL of its own.
func TestIncidentsFeedReader(t *testing.T) {
	e := newEnv(t, func(cfg *Config) { cfg.PublicURL = "https://status.example.com" })
	ids := putIncidents(t, e, 3)
	_, body := e.get(t, onAPI, pathIncidentsFeed)
	var got struct {
		Type, Title, Link, Self string
		Date                    time.Time
		Items                   []struct {
			GUID, Link, Title string
			Date, Published   time.Time
		}
	}
	out := nodetest.Run(t, feedReader, body)
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	const base = "https://status.example.com"
	incidents, err := e.store.ListIncidents(t.Context(), cdnapi.IncidentQuery{Limit: 10})
	must(t, err)
	if got.Type != "atom" || got.Title != "Incidents" || got.Link != base+"/status" || got.Self != base+pathIncidentsFeed ||
		!got.Date.Equal(incidents[0].UpdatedAt) || len(got.Items) != len(ids) {
		t.Fatalf("feedparser read %s", out)
	}
	for i, it := range got.Items {
		inc := incidents[i]
		if it.GUID != base+"/status#"+ids[i] || it.Link != it.GUID || it.Title != incidentTitle(inc) ||
			!it.Date.Equal(inc.UpdatedAt) || !it.Published.Equal(inc.StartedAt) {
			t.Errorf("item %d: %+v, want incident %+v", i, it, inc)
		}
	}
}
