package cdnapi

import "time"

// File is a file stored under a project, as listed by GET /api/v1/files.
type File struct {
	ID        string // "fil_" followed by 1–64 of [A-Za-z0-9]
	Project   string // owning project; never shown in the API
	CreatedAt time.Time
	Filename  string
	Bytes     int64
	Checksum  string // "sha256:" followed by 64 lower-case hex characters
}

// Region is a point of presence, as listed by GET /api/v1/regions.
type Region struct {
	Code    string // three upper-case letters and a digit, e.g. "FRA1"
	Name    string // display name of the place, e.g. "Frankfurt"
	Zone    string // e.g. "eu-central"
	Country string // ISO 3166-1 alpha-2, upper case
	Status  Status // the status in force when the region was read

	// Until, when not zero, is when the status an operator set with an end
	// (regions set-status --until) ends; the API does not show it.
	Until time.Time
	// Expired is the status that ended at Until, which has passed: Status
	// is then operational again. "" while the status holds.
	Expired Status
}

// WithStatusUntil returns r as of now, given the status an operator set
// until a time: once that time has come, and while the region still has
// the status that was set (an ingest may have written another since, which
// has no end), the region is operational again and the status that ended
// is kept in Expired. The stores apply it to every region they read, so
// that no list ever shows an expired status.
func (r Region) WithStatusUntil(set Status, until, now time.Time) Region {
	if until.IsZero() || r.Status != set {
		return r
	}
	r.Until = until.UTC()
	if !now.Before(until) {
		r.Expired, r.Status = r.Status, StatusOperational
	}
	return r
}

// Asset is a recently requested asset, as listed by GET /api/v1/assets.
type Asset struct {
	ID          string // "ast_" followed by 1–64 of [A-Za-z0-9]
	CreatedAt   time.Time
	Path        string // request path, starting with "/"
	Bytes       int64
	CacheStatus CacheStatus
	Region      string // code of the point of presence that served it
}

// CacheStatus is the upper-case cache result of an asset request.
type CacheStatus string

// The cache results an edge reports. The spec shows HIT and REVALIDATED; the
// rest are the values common CDNs (nginx's $upstream_cache_status among them)
// use, as fixed by API.md.
const (
	CacheHit         CacheStatus = "HIT"
	CacheMiss        CacheStatus = "MISS"
	CacheExpired     CacheStatus = "EXPIRED"
	CacheStale       CacheStatus = "STALE"
	CacheUpdating    CacheStatus = "UPDATING"
	CacheRevalidated CacheStatus = "REVALIDATED"
	CacheBypass      CacheStatus = "BYPASS"
	CacheDynamic     CacheStatus = "DYNAMIC"
)

// CacheStatuses lists every valid CacheStatus.
var CacheStatuses = []CacheStatus{
	CacheHit, CacheMiss, CacheExpired, CacheStale,
	CacheUpdating, CacheRevalidated, CacheBypass, CacheDynamic,
}

// Valid reports whether c is one of CacheStatuses.
func (c CacheStatus) Valid() bool {
	for _, v := range CacheStatuses {
		if c == v {
			return true
		}
	}
	return false
}

// Timestamp formats t the one way the API shows time: RFC 3339, UTC, with a Z
// and whole seconds.
func Timestamp(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format(TimeLayout)
}

// TimeLayout is the layout of every timestamp the API shows.
const TimeLayout = "2006-01-02T15:04:05Z"
