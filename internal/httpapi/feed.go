package httpapi

import (
	"context"
	"encoding/xml"
	"net/http"
	"strings"
	"time"

	"github.com/cdnapi/cdnapi"
)

// pathIncidentsFeed is the Atom feed of the incidents, for feed readers and
// the services that watch a status page through one.
const pathIncidentsFeed = "/api/v1/status/incidents.atom"

// feedEntries is how many incidents the feed holds: the newest, as feed
// readers only ever show the latest ones.
const feedEntries = 50

// contentTypeAtom is the media type of RFC 4287.
const contentTypeAtom = "application/atom+xml; charset=utf-8"

// atomFeed and atomEntry are the Atom document (RFC 4287) of the feed:
// every element the RFC requires (atom:id, atom:title, atom:updated, an
// author for the feed, and an alternate link or content for each entry),
// and no other.
type atomFeed struct {
	XMLName xml.Name    `xml:"http://www.w3.org/2005/Atom feed"`
	ID      string      `xml:"id"`
	Title   string      `xml:"title"`
	Updated string      `xml:"updated"`
	Author  atomPerson  `xml:"author"`
	Links   []atomLink  `xml:"link"`
	Entries []atomEntry `xml:"entry"`
}

type atomPerson struct {
	Name string `xml:"name"`
}

type atomLink struct {
	Rel  string `xml:"rel,attr"`
	Type string `xml:"type,attr,omitempty"`
	Href string `xml:"href,attr"`
}

type atomEntry struct {
	ID        string       `xml:"id"`
	Title     string       `xml:"title"`
	Updated   string       `xml:"updated"`
	Published string       `xml:"published"`
	Link      atomLink     `xml:"link"`
	Category  atomCategory `xml:"category"`
	Summary   string       `xml:"summary"`
}

type atomCategory struct {
	Term string `xml:"term,attr"`
}

// renderIncidentsFeed renders GET /api/v1/status/incidents.atom: the newest
// incidents as an Atom feed. An entry's id stays the incident's for good,
// and its updated is when it opened or, once resolved, when it resolved,
// so readers show a resolution as an update of the same entry.
func renderIncidentsFeed(cfg Config) render {
	return func(r *http.Request) (*representation, error) {
		if err := parseNoQuery(r.URL.RawQuery); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(r.Context(), cfg.StoreTimeout)
		incidents, err := cfg.History.ListIncidents(ctx, cdnapi.IncidentQuery{Limit: feedEntries})
		cancel()
		if err != nil {
			return nil, storeError(r, err)
		}
		return &representation{contentType: contentTypeAtom, cacheControl: cacheStatus, body: incidentsFeed(incidents)}, nil
	}
}

// incidentsFeed returns the Atom document of incidents, newest first.
func incidentsFeed(incidents []cdnapi.Incident) []byte {
	feed := atomFeed{
		// A URN, not the feed's URL: the same feed is reached under
		// several names (a load balancer's, each process's).
		ID:     "urn:cdnapi:status:incidents",
		Title:  "Incidents",
		Author: atomPerson{Name: "cdnapi status"},
		Links: []atomLink{
			{Rel: "self", Type: "application/atom+xml", Href: pathIncidentsFeed},
			{Rel: "alternate", Type: "text/html", Href: "/status"},
		},
	}
	// The feed changed last when its newest change did; an empty feed
	// never changed, which the Unix epoch says.
	var newest time.Time
	for _, i := range incidents {
		updated := i.StartedAt
		if !i.Open() {
			updated = i.ResolvedAt
		}
		if updated.After(newest) {
			newest = updated
		}
		feed.Entries = append(feed.Entries, atomEntry{
			ID:        "urn:cdnapi:incident:" + i.ID,
			Title:     incidentTitle(i),
			Updated:   cdnapi.Timestamp(updated),
			Published: cdnapi.Timestamp(i.StartedAt),
			Link:      atomLink{Rel: "alternate", Type: "text/html", Href: "/status#" + i.ID},
			Category:  atomCategory{Term: string(i.Status)},
			Summary:   incidentSummary(i),
		})
	}
	if newest.IsZero() {
		newest = time.Unix(0, 0)
	}
	feed.Updated = cdnapi.Timestamp(newest)
	b, _ := xml.MarshalIndent(feed, "", "  ") // strings only: cannot fail
	return append(append([]byte(xml.Header), b...), '\n')
}

// statusWords spells a status for people.
func statusWords(s cdnapi.Status) string { return strings.ReplaceAll(string(s), "_", " ") }

func incidentTitle(i cdnapi.Incident) string {
	t := i.Component + ": " + statusWords(i.Status)
	if i.Open() {
		return t
	}
	return t + " (resolved)"
}

func incidentSummary(i cdnapi.Incident) string {
	s := i.Component + " was " + statusWords(i.Status) + " from " + cdnapi.Timestamp(i.StartedAt)
	if i.Open() {
		s = i.Component + " has been " + statusWords(i.Status) + " since " + cdnapi.Timestamp(i.StartedAt)
	} else {
		s += " to " + cdnapi.Timestamp(i.ResolvedAt)
	}
	s += "."
	if i.Message != "" {
		s += " " + i.Message
	}
	return s
}
