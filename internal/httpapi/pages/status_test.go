package pages

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

var sampleNow = time.Date(2026, 11, 20, 14, 3, 7, 0, time.UTC)

// sampleStatus is a busy day: a component down, ten incidents with long
// messages, twenty regions in five zones and 90 days of history.
func sampleStatus() StatusData {
	doc := cdnapi.StatusDocument{Status: cdnapi.StatusPartialOutage, Version: "v1", Region: "eu-central-1", UpdatedAt: sampleNow}
	for _, c := range cdnapi.Components {
		doc.Components = append(doc.Components, cdnapi.Component{Name: c, Status: cdnapi.StatusOperational})
	}
	doc.Components[2].Status = cdnapi.StatusPartialOutage
	var incidents []cdnapi.Incident
	for i := range 10 {
		inc := cdnapi.Incident{ID: fmt.Sprintf("inc_%d", i), Component: cdnapi.Components[i%4],
			Status:    cdnapi.Statuses[1+i%4],
			Message:   "We are replacing a failed storage shelf in one of the Frankfurt racks; reads may be slow until it is done.",
			StartedAt: sampleNow.Add(-time.Duration(i*7*24+3) * time.Hour)}
		if i > 0 {
			inc.ResolvedAt = inc.StartedAt.Add(time.Duration(i*17) * time.Minute)
		}
		incidents = append(incidents, inc)
	}
	var regions []cdnapi.Region
	for i := range 20 {
		regions = append(regions, cdnapi.Region{Code: fmt.Sprintf("R%c%c%d", 'A'+i/10, 'A'+i%10, i%10), Name: "Somewhere Far",
			Zone: []string{"eu-central", "us-east", "ap-south", "sa-east", "af-south"}[i%5], Country: "DE", Status: cdnapi.Statuses[i%5]})
	}
	return StatusData{Doc: doc, Now: sampleNow, Regions: regions, Incidents: incidents,
		Uptime: cdnapi.ComputeUptime(incidents, sampleNow.AddDate(0, 0, -60), sampleNow), Refresh: 5 * time.Second}
}

// TestStatusPageCSP: the page's inline style and script are exactly what
// its CSP allows, and the script is left out when the page does not refresh.
func TestStatusPageCSP(t *testing.T) {
	for _, refresh := range []time.Duration{5 * time.Second, 0} {
		d := sampleStatus()
		d.Refresh = refresh
		p := Status(d)
		body := string(p.Body)
		for _, tag := range []string{"style", "script"} {
			m := regexp.MustCompile(`<`+tag+`>([^<]*)</`+tag+`>`).FindAllStringSubmatch(body, -1)
			if tag == "script" && refresh == 0 {
				if len(m) != 0 || strings.Contains(p.CSP, "script-src") {
					t.Errorf("without refresh: %d scripts, CSP %q", len(m), p.CSP)
				}
				continue
			}
			if len(m) != 1 {
				t.Fatalf("%d %s elements, want 1", len(m), tag)
			}
			sum := sha256.Sum256([]byte(m[0][1]))
			if h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(p.CSP, tag+"-src "+h) {
				t.Errorf("CSP %q does not allow the %s, %s", p.CSP, tag, h)
			}
		}
	}
}

// TestStatusPageStates: every state is written out in words, not only
// coloured; messages are escaped.
func TestStatusPageStates(t *testing.T) {
	d := sampleStatus()
	d.Incidents[0].Message = `<script>alert(1)</script>`
	body := string(Status(d).Body)
	for _, want := range []string{"Partial outage", "Operational", "Under maintenance", "Degraded performance", "Major outage",
		"&lt;script&gt;alert(1)&lt;/script&gt;", "<h3>af-south</h3>", "no data", "ongoing for 3 h 0 min"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, "<script>alert") {
		t.Error("a message was not escaped")
	}
}

// TestUptimeText: a figure says over how long it was measured. A minute
// down two minutes after the service started once read "50.00% over 30
// days". (A minute of maintenance is left out of uptime: see
// cdnapi.TestComputeUptime and TestStatusBanner.)
func TestUptimeText(t *testing.T) {
	day := 24 * time.Hour
	maintenance := func(since time.Time) []cdnapi.Incident {
		return []cdnapi.Incident{{Component: cdnapi.ComponentAPI, Status: cdnapi.StatusMajorOutage,
			StartedAt: sampleNow.Add(-time.Minute), ResolvedAt: sampleNow}}
	}
	for _, tt := range []struct {
		name  string
		since time.Time
		want  string
	}{
		{"two minutes old", sampleNow.Add(-2 * time.Minute), "50.00% since 20 Nov 2026 14:01 UTC, when measuring began (2 min)."},
		{"40 days old", sampleNow.Add(-40 * day), "99.99% over 30 days; 99.99% over the 40 days since 11 Oct 2026, when measuring began."},
		{"a year old", sampleNow.Add(-365 * day), "99.99% over 30 days, 99.99% over 90 days."},
		{"nothing recorded", time.Time{}, "no data yet."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			since := tt.since
			if since.IsZero() {
				since = sampleNow // as ReadUptime computes it
			}
			u := cdnapi.ComputeUptime(maintenance(tt.since), since, sampleNow)[0]
			if got := uptimeText(u, tt.since, sampleNow); got != tt.want {
				t.Errorf("uptimeText = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRegionLine: regions that are not operational are said in the banner,
// worst first, with their state when they differ.
func TestRegionLine(t *testing.T) {
	fra := cdnapi.Region{Code: "FRA1", Name: "Frankfurt", Status: cdnapi.StatusPartialOutage}
	nrt := cdnapi.Region{Code: "NRT1", Name: "Tokyo", Status: cdnapi.StatusUnderMaintenance}
	gru := cdnapi.Region{Code: "GRU1", Name: "São Paulo", Status: cdnapi.StatusPartialOutage}
	for _, tt := range []struct {
		down []cdnapi.Region
		want string
	}{
		{nil, ""},
		{[]cdnapi.Region{fra}, "1 region in partial outage: Frankfurt (FRA1)."},
		{[]cdnapi.Region{fra, gru}, "2 regions in partial outage: Frankfurt (FRA1), São Paulo (GRU1)."},
		{[]cdnapi.Region{nrt, fra}, "2 regions not operational: Frankfurt (FRA1) partial outage, Tokyo (NRT1) under maintenance."},
	} {
		if got := regionLine(tt.down); got != tt.want {
			t.Errorf("regionLine(%d regions) = %q, want %q", len(tt.down), got, tt.want)
		}
	}
	// On the page: the banner says it, and does not claim all is well.
	d := sampleStatus()
	d.Doc.Status = cdnapi.StatusOperational
	for i := range d.Doc.Components {
		d.Doc.Components[i].Status = cdnapi.StatusOperational
	}
	d.Regions = []cdnapi.Region{fra, {Code: "IAD1", Name: "Ashburn", Zone: "us-east", Status: cdnapi.StatusOperational}}
	body := string(Status(d).Body)
	for _, want := range []string{"<p>All components operational</p><p class=\"sub\">1 region in partial outage: Frankfurt (FRA1).",
		"<title>All components operational"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, "All systems operational") {
		t.Error("the page says all systems are operational with a region in partial outage")
	}
}

// TestComponentLine: the banner names the components not operational, the
// faults worst first, then maintenance, then what is not deployed here.
func TestComponentLine(t *testing.T) {
	comps := func(statuses ...cdnapi.Status) []cdnapi.Component {
		var out []cdnapi.Component
		for i, s := range statuses {
			out = append(out, cdnapi.Component{Name: cdnapi.Components[i], Status: s})
		}
		return out
	}
	op, mnt, deg, part, major := cdnapi.StatusOperational, cdnapi.StatusUnderMaintenance, cdnapi.StatusDegradedPerformance,
		cdnapi.StatusPartialOutage, cdnapi.StatusMajorOutage
	planned := []string{cdnapi.ComponentUpload, cdnapi.ComponentVirusScanning}
	for _, tt := range []struct {
		components  []cdnapi.Component
		notDeployed []string
		want        string
	}{
		{comps(op, op, op, op), nil, ""},
		{comps(op, mnt, op, mnt), planned, "Upload Service and Virus Scanning are not deployed here."},
		{comps(op, mnt, part, mnt), planned, "Storage is in partial outage. Upload Service and Virus Scanning are not deployed here."},
		{comps(deg, op, major, op), nil, "Storage is in major outage. API is degraded."},
		{comps(part, op, part, mnt), nil, "API and Storage are in partial outage. Virus Scanning is under maintenance."},
		{comps(mnt, mnt, op, op), planned[:1], "API is under maintenance. Upload Service is not deployed here."},
	} {
		if got := componentLine(tt.components, tt.notDeployed); got != tt.want {
			t.Errorf("componentLine(%v, %v)\n got %q\nwant %q", tt.components, tt.notDeployed, got, tt.want)
		}
	}
}

// TestStatusBanner: the case of issue 34. With Storage in partial outage
// and FRA1 under maintenance the banner named neither the component at
// fault nor that the maintenance was not its cause; it read "Updated … by
// local" on a server given no region name; and the page did not say that
// maintenance is left out of uptime.
func TestStatusBanner(t *testing.T) {
	d := sampleStatus()
	d.Doc.Region = cdnapi.UnnamedRegion
	d.Doc.Status = cdnapi.StatusPartialOutage
	for i, s := range []cdnapi.Status{cdnapi.StatusOperational, cdnapi.StatusUnderMaintenance, cdnapi.StatusPartialOutage, cdnapi.StatusUnderMaintenance} {
		d.Doc.Components[i].Status = s
	}
	d.NotDeployed = []string{cdnapi.ComponentUpload, cdnapi.ComponentVirusScanning}
	d.Regions = []cdnapi.Region{{Code: "FRA1", Name: "Frankfurt", Zone: "eu-central", Status: cdnapi.StatusUnderMaintenance}}
	body := string(Status(d).Body)
	for _, want := range []string{
		`<p>Partial outage</p><p class="sub" id="components-at-fault">Storage is in partial outage. Upload Service and Virus Scanning are not deployed here.</p>` +
			`<p class="sub">1 region under maintenance: Frankfurt (FRA1).`,
		`Updated <time datetime="2026-11-20T14:03:07Z">2026-11-20 14:03 UTC</time>.`,
		`Planned maintenance is left out: it counts as neither up nor down.`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, " by local") {
		t.Error(`the page says "by local" of a server given no region name`)
	}
	d.Doc.Region = "eu-central-1"
	if body := string(Status(d).Body); !strings.Contains(body, `</time> by eu-central-1.`) {
		t.Error("the page does not name the region that answered")
	}
}
