package cdnapi

import (
	"testing"
	"time"
)

func TestComputeUptime(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	inc := func(component string, s Status, start, end time.Duration) Incident {
		i := Incident{Component: component, Status: s, StartedAt: now.Add(-start)}
		if end > 0 {
			i.ResolvedAt = now.Add(-end)
		}
		return i
	}
	tests := []struct {
		name        string
		incidents   []Incident
		since       time.Time
		short, long float64 // of Storage
		today       Status  // worst of Storage today
		firstDay    float64 // percent of the oldest bar
	}{
		{"no incidents, 90 days of history", nil, now.Add(-100 * day), 100, 100, StatusOperational, 100},
		{"three days down in the last 30", []Incident{inc(ComponentStorage, StatusMajorOutage, 10*day, 7*day)},
			now.Add(-100 * day), 90, 100 - 100*3.0/90, StatusOperational, 100},
		{"history of ten days", []Incident{inc(ComponentStorage, StatusPartialOutage, 5*day, 4*day)},
			now.Add(-10 * day), 90, 90, StatusOperational, -1},
		{"open for the last six hours", []Incident{inc(ComponentStorage, StatusDegradedPerformance, 6*time.Hour, 0)},
			now.Add(-100 * day), 100 - 100*0.25/30, 100 - 100*0.25/90, StatusDegradedPerformance, 100},
		{"other components do not count", []Incident{inc(ComponentAPI, StatusMajorOutage, 6*time.Hour, 0)},
			now.Add(-100 * day), 100, 100, StatusOperational, 100},
		{"nothing recorded", nil, now, -1, -1, StatusOperational, -1},
		// Planned maintenance is left out: neither up nor down.
		{"maintenance is not downtime", []Incident{inc(ComponentStorage, StatusUnderMaintenance, 6*time.Hour, time.Hour)},
			now.Add(-100 * day), 100, 100, StatusUnderMaintenance, 100},
		{"maintenance is not measured time", []Incident{
			inc(ComponentStorage, StatusUnderMaintenance, 20*day, 10*day),
			inc(ComponentStorage, StatusMajorOutage, 2*day, day)},
			now.Add(-100 * day), 100 - 100*1.0/20, 100 - 100*1.0/80, StatusOperational, 100},
		{"all of the history under maintenance", []Incident{inc(ComponentStorage, StatusUnderMaintenance, 40*time.Second, 0)},
			now.Add(-40 * time.Second), 100, 100, StatusUnderMaintenance, -1},
		{"a maintenance that became an outage counts whole", []Incident{inc(ComponentStorage, StatusMajorOutage, 3*day, 0)},
			now.Add(-100 * day), 90, 100 - 100*3.0/90, StatusMajorOutage, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputeUptime(tt.incidents, tt.since, now)
			if len(got) != len(Components) {
				t.Fatalf("%d components", len(got))
			}
			s := got[2]
			if s.Component != ComponentStorage || len(s.Days) != UptimeDays {
				t.Fatalf("third is %s with %d days", s.Component, len(s.Days))
			}
			near := func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
			if !near(s.Short, tt.short) || !near(s.Long, tt.long) {
				t.Errorf("uptime %v / %v, want %v / %v", s.Short, s.Long, tt.short, tt.long)
			}
			last := s.Days[UptimeDays-1]
			if !last.Date.Equal(now.Truncate(day)) || last.Worst != tt.today {
				t.Errorf("today %v %s, want %v %s", last.Date, last.Worst, now.Truncate(day), tt.today)
			}
			if !near(s.Days[0].Percent, tt.firstDay) {
				t.Errorf("first day %v, want %v", s.Days[0].Percent, tt.firstDay)
			}
		})
	}
}

// TestMeasuredSpan: a figure over a window counts only the time since the
// history started, and says so when that is shorter than the window.
func TestMeasuredSpan(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		since time.Time
		span  time.Duration
		whole bool
	}{
		{"two minutes of history", now.Add(-2 * time.Minute), 2 * time.Minute, false},
		{"40 days of history", now.Add(-40 * 24 * time.Hour), UptimeShortWindow, true},
		{"exactly the window", now.Add(-UptimeShortWindow), UptimeShortWindow, true},
		{"nothing recorded", time.Time{}, 0, false},
		{"history that starts later than now", now.Add(time.Minute), 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			span, whole := MeasuredSpan(tt.since, now, UptimeShortWindow)
			if span != tt.span || whole != tt.whole {
				t.Errorf("MeasuredSpan = %v, %v; want %v, %v", span, whole, tt.span, tt.whole)
			}
		})
	}
	// The figure itself counts the span only: a minute down in a
	// two-minute history is half of it. (A minute of maintenance would be
	// left out: see TestComputeUptime.)
	inc := Incident{Component: ComponentAPI, Status: StatusMajorOutage, StartedAt: now.Add(-time.Minute), ResolvedAt: now}
	if got := ComputeUptime([]Incident{inc}, now.Add(-2*time.Minute), now)[0].Short; got != 50 {
		t.Errorf("uptime %v, want 50 over the two minutes measured", got)
	}
}
