package cdnapi

import "time"

// Status is the state of the service, of one of its components, or of a
// region.
type Status string

// The status values of API.md.
const (
	StatusOperational         Status = "operational"
	StatusDegradedPerformance Status = "degraded_performance"
	StatusPartialOutage       Status = "partial_outage"
	StatusMajorOutage         Status = "major_outage"
	StatusUnderMaintenance    Status = "under_maintenance"
)

// Statuses lists every valid Status, best first in the order of severity.
var Statuses = []Status{
	StatusOperational,
	StatusUnderMaintenance,
	StatusDegradedPerformance,
	StatusPartialOutage,
	StatusMajorOutage,
}

// severity ranks a Status: the overall status is the component status with
// the highest rank. Maintenance is planned, so it ranks below any fault.
func (s Status) severity() int {
	for i, v := range Statuses {
		if s == v {
			return i
		}
	}
	return len(Statuses) // unknown values are treated as worse than anything
}

// Valid reports whether s is one of Statuses.
func (s Status) Valid() bool { return s.severity() < len(Statuses) }

// Worst returns the more severe of a and b.
func Worst(a, b Status) Status {
	if b.severity() > a.severity() {
		return b
	}
	return a
}

// The component names of the status document, in the order it lists them.
const (
	ComponentAPI           = "API"
	ComponentUpload        = "Upload Service"
	ComponentStorage       = "Storage"
	ComponentVirusScanning = "Virus Scanning"
)

// Components lists the component names in the order of the status document.
var Components = []string{ComponentAPI, ComponentUpload, ComponentStorage, ComponentVirusScanning}

// UnnamedRegion is the Region of a status document whose server was given
// no region name (serve --region): pages then say nothing of who answered.
const UnnamedRegion = "local"

// Version is the API version label of the status document.
const Version = "v1"

// StatusDocument is the answer of GET /api/v1/status.
type StatusDocument struct {
	Status     Status // the worst of the component statuses
	Version    string
	Region     string // configured name of the answering region; UnnamedRegion when none was given
	Components []Component
	UpdatedAt  time.Time // when the statuses were last evaluated
	// Until holds, by component name, when the status an operator set
	// with an end (status set --until) ends. The status page shows it; the
	// JSON document does not. Nil when no such status is in force; never
	// modified once the document is published.
	Until map[string]time.Time
}

// Component is one entry of a StatusDocument.
type Component struct {
	Name   string
	Status Status
}

// ComponentOverride is a status an operator set by hand for a component. It
// holds until Until, when that is set, or until it is cleared.
type ComponentOverride struct {
	Name      string
	Status    Status
	Until     time.Time // zero: no end
	UpdatedAt time.Time
	Message   string // what the operator said about it, shown with its incident; "" for none
}

// Active reports whether the override is in force at now.
func (o ComponentOverride) Active(now time.Time) bool {
	return o.Until.IsZero() || now.Before(o.Until)
}
