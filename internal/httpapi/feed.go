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

// incidentsFeedHandler serves the feed through cache. Its links start with
// the base URL feedBase gives; when that comes from the request's Host, the
// Host is part of the cache key, so that no reader is given links to a
// name another reader used.
func incidentsFeedHandler(cache *pageCache, cfg Config) http.Handler {
	render := renderIncidentsFeed(cfg)
	return cache.handler(func(r *http.Request) (listRequest, error) {
		key := pathIncidentsFeed + "?" + r.URL.RawQuery
		if cfg.PublicURL == "" {
			key += "#" + feedBase(cfg, r)
		}
		return listRequest{key: key, render: render}, nil
	})
}

// feedBase returns the base URL of the feed's links and ids: the
// configured public URL, else the scheme and Host the request came with
// (a reader's own name for the service), else the API listener's address.
func feedBase(cfg Config, r *http.Request) string {
	if cfg.PublicURL != "" {
		return strings.TrimSuffix(cfg.PublicURL, "/")
	}
	if r.Host == "" { // HTTP/1.0 without Host
		return cfg.addresses().API
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// renderIncidentsFeed renders GET /api/v1/status/incidents.atom: the newest
// incidents as an Atom feed. An entry's id stays the incident's for good,
// and its updated is the incident's last change (opened, worse, a new
// message, resolved), so readers show each change the webhooks tell of as
// an update of the same entry.
func renderIncidentsFeed(cfg Config) render {
	// An empty feed has changed last, as far as it can tell, when this
	// process began to serve it: nothing it shows happened before.
	started := time.Now().UTC().Truncate(time.Second)
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
		body := incidentsFeed(feedBase(cfg, r), incidents, started)
		return &representation{contentType: contentTypeAtom, cacheControl: cacheStatus, body: body}, nil
	}
}

// incidentsFeed returns the Atom document of incidents, newest first, with
// every link and id an absolute URL under base: readers resolve no
// relative reference the same way, and some drop them. empty is the
// feed's updated when it has no entry.
func incidentsFeed(base string, incidents []cdnapi.Incident, empty time.Time) []byte {
	feed := atomFeed{
		// The feed's own URL, and each entry's the incident's place on
		// the status page: IRIs that stay as long as the public URL does
		// (serve --public-url), unlike the urn:cdnapi names they replace,
		// which no registry knows.
		ID:     base + pathIncidentsFeed,
		Title:  "Incidents",
		Author: atomPerson{Name: "cdnapi status"},
		Links: []atomLink{
			{Rel: "self", Type: "application/atom+xml", Href: base + pathIncidentsFeed},
			{Rel: "alternate", Type: "text/html", Href: base + "/status"},
		},
	}
	// The feed changed last when its newest entry did.
	var newest time.Time
	for _, i := range incidents {
		updated := i.UpdatedAt
		if updated.IsZero() { // not written by a store that keeps it
			updated = i.StartedAt
			if !i.Open() {
				updated = i.ResolvedAt
			}
		}
		if updated.After(newest) {
			newest = updated
		}
		link := base + "/status#" + i.ID
		feed.Entries = append(feed.Entries, atomEntry{
			ID:        link,
			Title:     incidentTitle(i),
			Updated:   cdnapi.Timestamp(updated),
			Published: cdnapi.Timestamp(i.StartedAt),
			Link:      atomLink{Rel: "alternate", Type: "text/html", Href: link},
			Category:  atomCategory{Term: string(i.Status)},
			Summary:   incidentSummary(i),
		})
	}
	if newest.IsZero() {
		newest = empty
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
