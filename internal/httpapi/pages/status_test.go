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
