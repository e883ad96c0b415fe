package cdnapi

import (
	"context"
	"time"
)

// The windows of the uptime figures. History older than the longest is
// pruned.
const (
	UptimeShortWindow = 30 * 24 * time.Hour
	UptimeLongWindow  = 90 * 24 * time.Hour
	UptimeDays        = 90 // daily bars of the status page
)

// Uptime is the measured availability of one component.
type Uptime struct {
	Component string
	// Short and Long are the percentages of time operational over
	// UptimeShortWindow and UptimeLongWindow, counted from the start of
	// the history when that is later, planned maintenance left out; -1
	// when nothing was measured.
	Short, Long float64
	// Days holds one entry per UTC day, the oldest first, ending today.
	Days []UptimeDay
}

// UptimeDay is one daily bar: the worst status of the day and the share of
// it that was operational.
type UptimeDay struct {
	Date    time.Time // midnight UTC
	Worst   Status
	Percent float64 // -1 when the day is before the history started
}

// ComputeUptime derives the uptime of every component from its incidents:
// the time a component was in an incident is the time it was not
// operational, except planned maintenance, which is left out (see
// percentUp). since is when the history starts (the first recorded
// status); time before it is not counted. incidents may be in any order and
// may include other components' and older ones.
func ComputeUptime(incidents []Incident, since, now time.Time) []Uptime {
	now = now.UTC()
	out := make([]Uptime, len(Components))
	today := now.Truncate(24 * time.Hour)
	for i, name := range Components {
		var mine []Incident
		for _, inc := range incidents {
			if inc.Component == name {
				mine = append(mine, inc)
			}
		}
		u := Uptime{Component: name, Days: make([]UptimeDay, UptimeDays)}
		u.Short = percentUp(mine, now.Add(-UptimeShortWindow), now, since)
		u.Long = percentUp(mine, now.Add(-UptimeLongWindow), now, since)
		for d := range UptimeDays {
			start := today.AddDate(0, 0, d-UptimeDays+1)
			end := start.Add(24 * time.Hour)
			if now.Before(end) {
				end = now
			}
			day := UptimeDay{Date: start, Worst: StatusOperational}
			day.Percent = percentUp(mine, start, end, since)
			for _, inc := range mine {
				if overlap(inc, start, end, now) > 0 {
					day.Worst = Worst(day.Worst, inc.Status)
				}
			}
			u.Days[d] = day
		}
		out[i] = u
	}
	return out
}

// percentUp returns the percentage of [from, to) after since that no
// incident covers, or -1 when none of it is after since.
//
// Planned maintenance is left out of uptime, as Statuspage and its peers
// do: an incident that was never worse than under_maintenance (an
// operator's announced maintenance) is neither up nor down, and its time
// is taken out of the time measured. An incident that became a fault
// counts whole, its maintenance too, since an Incident keeps only the
// worst status it reached. When all of the time measured was maintenance,
// nothing went wrong in it: 100.
func percentUp(incidents []Incident, from, to, since time.Time) float64 {
	from = later(from, since)
	if !to.After(from) {
		return -1
	}
	var down, planned time.Duration
	for _, inc := range incidents {
		if inc.Status == StatusUnderMaintenance {
			planned += overlap(inc, from, to, to)
		} else {
			down += overlap(inc, from, to, to)
		}
	}
	total := to.Sub(from) - planned
	if total <= 0 {
		return 100
	}
	return 100 * float64(total-min(down, total)) / float64(total)
}

// overlap returns how much of [from, to) inc covers; an open incident runs
// until now.
func overlap(inc Incident, from, to, now time.Time) time.Duration {
	end := inc.ResolvedAt
	if inc.Open() {
		end = now
	}
	s, e := later(inc.StartedAt, from), end
	if to.Before(e) {
		e = to
	}
	if !e.After(s) {
		return 0
	}
	return e.Sub(s)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// MeasuredSpan returns how much of the window that ends at now an uptime
// figure counts, given since, when the history starts (zero: nothing
// recorded): the whole window, or only the time since the history started
// when that is shorter. A figure over a window longer than the service has
// been measured must be read as over the span, not the window: a minute
// down in the first two minutes is half the time, not half of 30 days.
func MeasuredSpan(since, now time.Time, window time.Duration) (span time.Duration, whole bool) {
	if since.IsZero() || !now.After(since) {
		return 0, false
	}
	if d := now.Sub(since); d < window {
		return d, false
	}
	return window, true
}

// UptimeSource is the part of a StatusHistory that ReadUptime reads.
type UptimeSource interface {
	StatusChanges(ctx context.Context, kind SubjectKind, since time.Time, limit int) ([]StatusChange, error)
	IncidentsSince(ctx context.Context, since time.Time) ([]Incident, error)
}

// ReadUptime reads the history of the last UptimeLongWindow and computes
// the uptime of every component at now. since is the time of the first
// recorded component status, from which uptime is measured; it is zero,
// and every figure -1, when nothing has been recorded.
func ReadUptime(ctx context.Context, src UptimeSource, now time.Time) (since time.Time, uptime []Uptime, err error) {
	first, err := src.StatusChanges(ctx, SubjectComponent, time.Time{}, 1)
	if err != nil {
		return time.Time{}, nil, err
	}
	incidents, err := src.IncidentsSince(ctx, now.Add(-UptimeLongWindow))
	if err != nil {
		return time.Time{}, nil, err
	}
	since = now // nothing recorded: nothing measured
	if len(first) > 0 {
		since = first[0].At
	}
	uptime = ComputeUptime(incidents, since, now)
	if len(first) == 0 {
		since = time.Time{}
	}
	return since, uptime, nil
}
