package pages

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/cdnapi/cdnapi"
)

// StatusData is what the status page shows. The live document always comes
// from memory; the parts read from the store are nil, with their error flag
// set, when the store could not answer.
type StatusData struct {
	Doc cdnapi.StatusDocument
	Now time.Time

	Regions    []cdnapi.Region
	RegionsErr bool

	Incidents []cdnapi.Incident // newest first
	Uptime    []cdnapi.Uptime   // in the order of Doc.Components
	// MeasuredSince is when the history starts, from which uptime is
	// counted; zero when nothing has been recorded.
	MeasuredSince time.Time
	HistoryErr    bool

	// NotDeployed names the components this deployment does not have:
	// under maintenance by plan, which the banner says as "not deployed
	// here" rather than as maintenance.
	NotDeployed []string

	// Refresh is how often the page's script reloads it; 0 leaves the
	// script out.
	Refresh time.Duration
}

// statusStyle colours each state with a text colour and a bar colour that
// keep 4.5:1 (text) and 3:1 (bars) against white; the state is always
// written out as well.
const statusStyle = baseStyle +
	`.banner{color:#fff;border-radius:8px;padding:1rem 1.25rem;margin:1rem 0;font-size:1.25rem;font-weight:600}` +
	`.b-operational{background:#1a7f37}.b-under_maintenance{background:#0969da}.b-degraded_performance{background:#9a6700}` +
	`.b-partial_outage{background:#bc4c00}.b-major_outage{background:#cf222e}` +
	`.t-operational{color:#1a7f37}.t-under_maintenance{color:#0969da}.t-degraded_performance{color:#9a6700}` +
	`.t-partial_outage{color:#bc4c00}.t-major_outage{color:#cf222e}` +
	`.comp{border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem;margin:.75rem 0}` +
	`.comp h3{margin:0;font-size:1rem;display:flex;justify-content:space-between;gap:.5rem;flex-wrap:wrap}` +
	`.state{font-weight:600}.up{font-size:.875rem;color:var(--muted);margin:.25rem 0}` +
	`ol.bars{list-style:none;display:flex;gap:1px;padding:0;margin:.5rem 0 .25rem;height:2rem;position:relative}` +
	`ol.bars li{flex:1;min-width:0;border-radius:1px}` +
	// The figure of a day shows under the bars, from their left edge, so
	// that it never runs off a narrow screen. Hidden, it is clipped rather
	// than not displayed, so that it stays the bar's name for screen readers.
	`ol.bars li span{position:absolute;top:2.25rem;left:0;max-width:100%;` +
	`background:#1f2328;color:#fff;font-size:.8rem;padding:.2rem .45rem;border-radius:4px;z-index:2;` +
	`clip-path:inset(50%);width:1px;height:1px;overflow:hidden;white-space:nowrap}` +
	`ol.bars li:hover span,ol.bars li:focus span{clip-path:none;width:auto;height:auto;overflow:visible;white-space:normal}` +
	`ol.bars li:hover,ol.bars li:focus{opacity:.7}` +
	`.d-operational{background:#2da44e}.d-under_maintenance{background:#0969da}.d-degraded_performance{background:#bf8700}` +
	`.d-partial_outage{background:#e16f24}.d-major_outage{background:#cf222e}.d-none{background:#8c959f}` +
	`.axis{display:flex;justify-content:space-between;font-size:.75rem;color:var(--muted)}` +
	`.zones{display:grid;grid-template-columns:repeat(auto-fill,minmax(16rem,1fr));gap:.25rem 1.5rem}` +
	`.zones ul{list-style:none;padding:0;margin:0}.zones li{display:flex;justify-content:space-between;gap:.5rem;padding:.15rem 0;border-bottom:1px solid var(--line)}` +
	`.inc{border-left:4px solid var(--line);padding:.25rem .75rem;margin:.75rem 0}.inc p{margin:.2rem 0}` +
	`.notice{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.5rem .75rem}` +
	`.banner p{margin:0}.banner p.sub{font-size:1rem;font-weight:400;margin-top:.35rem}.banner a{color:#fff}` +
	`ul.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1rem;padding:0;margin:.25rem 0 .75rem;font-size:.875rem}` +
	`ul.legend li{display:flex;align-items:center;gap:.35rem}.k{display:inline-block;width:.8rem;height:1.2rem;border-radius:1px}` +
	`.k-operational{background:#2da44e}.k-under_maintenance{background:#0969da}.k-degraded_performance{background:#bf8700}` +
	`.k-partial_outage{background:#e16f24}.k-major_outage{background:#cf222e}.k-none{background:#8c959f}` +
	`.until{font-weight:400}`

// statusScript keeps the page current. It listens to the status stream
// (GET /api/v1/status/stream) and, at each event of a version other than
// the one it shows (meta status-version at first), fetches the page again
// and swaps in its main element, keeping the reader's place; browsers
// resume the stream with Last-Event-ID after a reconnect, so a restart of
// the server costs no fetch. The history (incidents, messages, uptime) is
// written by the round after the statuses it follows, and an operator's
// new message changes no status, so the page is fetched again 2 seconds
// after it loads and after each event, and once a minute. When the stream
// fails (no EventSource, a refusal, or five failed reconnects in a row) it
// polls every data-refresh seconds instead. It waits while focus is inside main, so
// that a keyboard user's position is not lost, and says so when the server
// cannot be reached.
const statusScript = `(function(){var m=document.getElementById('main'),s=+m.getAttribute('data-refresh')||10,due=false;` +
	`function refresh(){if(m.contains(document.activeElement)&&document.activeElement!==m){due=true;return}due=false;` +
	`fetch(location.pathname,{cache:'no-store'}).then(function(r){if(!r.ok)throw r.status;return r.text()}).then(function(t){` +
	`var n=new DOMParser().parseFromString(t,'text/html').getElementById('main');if(n){m.replaceWith(n);m=n}` +
	`}).catch(function(){var u=document.getElementById('updated');if(u)u.textContent='Cannot reach the server; this is the last state it reported.'})}` +
	`function poll(){setInterval(refresh,s*1000)}` +
	`if(!window.EventSource){poll();return}` +
	`var v=(document.querySelector('meta[name=status-version]')||{}).content,es=new EventSource('/api/v1/status/stream'),fails=0;` +
	`function soon(){setTimeout(refresh,2000)}soon();setInterval(refresh,60000);` +
	`es.onopen=function(){fails=0};es.addEventListener('status',function(e){if(e.lastEventId!==v){v=e.lastEventId;refresh();soon()}});` +
	`es.onerror=function(){if(es.readyState===2||++fails>5){es.close();poll()}};` +
	`setInterval(function(){if(due)refresh()},1000)})();`

var statusMain = template.Must(template.New("status").Funcs(template.FuncMap{
	"label": statusLabel,
	"ts":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"iso":   cdnapi.Timestamp,
	"pct":   percent,
	"day":   func(t time.Time) string { return t.Format("2 Jan 2006") },
	"span":  duration,
	"until": until,
}).Parse(`<main id="main" class="wrap"{{if .Refresh}} data-refresh="{{.RefreshSeconds}}"{{end}}>
<h1>cdnapi status</h1>
<div class="banner b-{{.Doc.Status}}" role="status"><p>{{.Headline}}</p>{{with .ComponentLine}}<p class="sub" id="components-at-fault">{{.}}</p>{{end}}{{with .RegionLine}}<p class="sub">{{.}} <a href="#h-regions">See the regions</a>.</p>{{end}}</div>
<p class="muted" id="updated">Updated <time datetime="{{iso .Doc.UpdatedAt}}">{{ts .Doc.UpdatedAt}}</time>{{if .RegionNamed}} by {{.Doc.Region}}{{end}}.{{if .Refresh}} This page refreshes itself every {{if eq .RefreshSeconds 1}}second{{else}}{{.RefreshSeconds}} seconds{{end}}.{{else}} Reload for the latest.{{end}}</p>
{{if .HistoryErr}}<p class="notice" id="history-unavailable">History is unavailable: storage is not answering. The states below are live; uptime and incidents come back with storage.</p>{{end}}
<section aria-labelledby="h-components">
<h2 id="h-components">Components</h2>
{{if .Uptime}}<ul class="legend" aria-label="What the colours of the daily bars mean">{{range .Legend}}<li><span class="k k-{{.Class}}"></span>{{.Text}}</li>{{end}}</ul>
<p class="up" id="uptime-rule">Uptime is the share of the time measured that a component was operational. Planned maintenance is left out: it counts as neither up nor down.</p>{{end}}
{{range .Components}}<div class="comp">
<h3><span>{{.Name}}</span> <span class="state t-{{.Status}}">{{label .Status}}{{with .Until}} <span class="until">until {{.}}</span>{{end}}</span></h3>
{{if .Uptime}}<p class="up">Uptime: {{.UptimeText}}</p>
<ol class="bars" aria-label="{{.Name}}: daily state over 90 days, oldest first">{{range .Uptime.Days}}<li tabindex="0" class="d-{{if lt .Percent 0.0}}none{{else}}{{.Worst}}{{end}}"><span>{{day .Date}}: {{if lt .Percent 0.0}}no data{{else}}{{pct .Percent}} up{{if ne .Worst "operational"}}, {{label .Worst}}{{end}}{{end}}</span></li>{{end}}</ol>
<div class="axis" aria-hidden="true"><span>90 days ago</span><span>Today</span></div>{{end}}
</div>
{{end}}</section>
<section aria-labelledby="h-incidents">
<h2 id="h-incidents">Incidents</h2>
{{if .HistoryErr}}<p>Unavailable while storage is down.</p>{{else if not .Incidents}}<p>No incidents in the last 90 days.</p>{{else}}
{{range .Incidents}}<article class="inc" id="{{.ID}}">
<h3>{{.Component}}: <span class="t-{{.Status}}">{{label .Status}}</span>{{if .Open}} <span class="state">(ongoing)</span>{{end}}</h3>
{{if .Message}}<p>{{.Message}}</p>{{end}}
<p class="muted">Started <time datetime="{{iso .StartedAt}}">{{ts .StartedAt}}</time>{{if .Open}}, ongoing for {{span .StartedAt $.Now}}{{else}}, resolved <time datetime="{{iso .ResolvedAt}}">{{ts .ResolvedAt}}</time> after {{span .StartedAt .ResolvedAt}}{{end}}.</p>
</article>
{{end}}{{end}}
</section>
<section aria-labelledby="h-regions">
<h2 id="h-regions">Regions</h2>
{{if .RegionsErr}}<p>Unavailable while storage is down.</p>{{else if not .Zones}}<p>No regions yet.</p>{{else}}<div class="zones">
{{range .Zones}}<div><h3>{{.Name}}</h3><ul>{{range .Regions}}<li><span>{{.Name}} <span class="muted">{{.Code}}</span></span><span class="t-{{.Status}}">{{label .Status}}{{if and (ne .Status "operational") (not .Until.IsZero)}} until {{until .Until $.Now}}{{end}}</span></li>{{end}}</ul></div>
{{end}}</div>{{end}}
</section>
<footer>Machine-readable: <a href="/api/v1/status">status</a>, <a href="/api/v1/status/incidents">incidents</a>, <a href="/api/v1/status/uptime">uptime</a>.</footer>
</main>
`))

// statusView is StatusData arranged for the template.
type statusView struct {
	StatusData
	Headline       string
	ComponentLine  string // the banner's line naming the components not operational; "" for none
	RegionLine     string // the banner's line about regions not operational; "" for none
	RegionNamed    bool   // the answering server was given a region name
	RefreshSeconds int
	Legend         []legendItem
	Components     []componentView
	Zones          []zoneView
}

type componentView struct {
	Name       string
	Status     cdnapi.Status
	Until      string // when the operator's status ends; "" for no end
	Uptime     *cdnapi.Uptime
	UptimeText string
}

// legendItem is one colour of the daily bars and what it means.
type legendItem struct{ Class, Text string }

// legend lists the colours of the daily bars, "no data" last.
var legend = func() []legendItem {
	var items []legendItem
	for _, s := range cdnapi.Statuses {
		items = append(items, legendItem{string(s), statusLabel(s)})
	}
	return append(items, legendItem{"none", "No data: before measuring began"})
}()

type zoneView struct {
	Name    string
	Regions []cdnapi.Region
}

// Status renders the status page of d.
func Status(d StatusData) Page {
	v := statusView{StatusData: d, Headline: headline(d.Doc.Status), RefreshSeconds: int(d.Refresh / time.Second), Legend: legend,
		ComponentLine: componentLine(d.Doc.Components, d.NotDeployed),
		RegionNamed:   d.Doc.Region != "" && d.Doc.Region != cdnapi.UnnamedRegion}
	if d.Refresh > 0 && v.RefreshSeconds < 1 {
		v.RefreshSeconds = 1
	}
	for _, c := range d.Doc.Components {
		cv := componentView{Name: c.Name, Status: c.Status}
		if end, ok := d.Doc.Until[c.Name]; ok && c.Status != cdnapi.StatusOperational {
			cv.Until = until(end, d.Now)
		}
		for i := range d.Uptime {
			if d.Uptime[i].Component == c.Name {
				cv.Uptime = &d.Uptime[i]
				cv.UptimeText = uptimeText(d.Uptime[i], d.MeasuredSince, d.Now)
			}
		}
		v.Components = append(v.Components, cv)
	}
	for _, r := range d.Regions {
		i := slices.IndexFunc(v.Zones, func(z zoneView) bool { return z.Name == r.Zone })
		if i < 0 {
			v.Zones = append(v.Zones, zoneView{Name: r.Zone})
			i = len(v.Zones) - 1
		}
		v.Zones[i].Regions = append(v.Zones[i].Regions, r)
	}
	slices.SortFunc(v.Zones, func(a, b zoneView) int { return cmp.Compare(a.Name, b.Name) })
	var down []cdnapi.Region
	for _, r := range d.Regions {
		if r.Status != cdnapi.StatusOperational {
			down = append(down, r)
		}
	}
	v.RegionLine = regionLine(down)
	// "All systems operational" would deny the regions in trouble.
	if d.Doc.Status == cdnapi.StatusOperational && len(down) > 0 {
		v.Headline = "All components operational"
	}
	script := ""
	if d.Refresh > 0 {
		script = statusScript
	}
	return render(v.Headline+" · cdnapi status", statusDescription, statusStyle, script, execute(statusMain, v), feedLink, versionMeta(d.Doc))
}

// componentLine is the banner's line that names the components not
// operational, the faults first, worst first ("Storage is in partial
// outage."), then those under maintenance, then those the deployment does
// not have ("Upload Service and Virus Scanning are not deployed here."), so
// that a reader sees which component the headline is about and that
// maintenance did not cause a fault beside it.
func componentLine(components []cdnapi.Component, notDeployed []string) string {
	var faults, planned []cdnapi.Component
	var absent []string
	for _, c := range components {
		switch {
		case c.Status == cdnapi.StatusOperational:
		case c.Status == cdnapi.StatusUnderMaintenance && slices.Contains(notDeployed, c.Name):
			absent = append(absent, c.Name)
		case c.Status == cdnapi.StatusUnderMaintenance:
			planned = append(planned, c)
		default:
			faults = append(faults, c)
		}
	}
	slices.SortStableFunc(faults, func(a, b cdnapi.Component) int { return b.Status.Severity() - a.Status.Severity() })
	var sentences []string
	say := func(names []string, state string) {
		verb := " is "
		if len(names) > 1 {
			verb = " are "
		}
		sentences = append(sentences, joinNames(names)+verb+state+".")
	}
	for i := 0; i < len(faults); {
		j := i
		var names []string
		for ; j < len(faults) && faults[j].Status == faults[i].Status; j++ {
			names = append(names, faults[j].Name)
		}
		state := regionState(faults[i].Status)
		if faults[i].Status == cdnapi.StatusDegradedPerformance {
			state = "degraded" // "API is degraded", not "is with degraded performance"
		}
		say(names, state)
		i = j
	}
	if len(planned) > 0 {
		var names []string
		for _, c := range planned {
			names = append(names, c.Name)
		}
		say(names, "under maintenance")
	}
	if len(absent) > 0 {
		say(absent, "not deployed here")
	}
	return strings.Join(sentences, " ")
}

// joinNames writes names as a list in a sentence: "A", "A and B", "A, B
// and C".
func joinNames(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// regionLine is the banner's line about the regions that are not
// operational: how many, in what state, and which ("1 region in partial
// outage: Frankfurt (FRA1)."). The service's status is its components';
// a region in trouble is said beside it, not folded into it.
func regionLine(down []cdnapi.Region) string {
	if len(down) == 0 {
		return ""
	}
	slices.SortStableFunc(down, func(a, b cdnapi.Region) int { return b.Status.Severity() - a.Status.Severity() })
	same := !slices.ContainsFunc(down, func(r cdnapi.Region) bool { return r.Status != down[0].Status })
	count := "1 region"
	if len(down) > 1 {
		count = fmt.Sprintf("%d regions", len(down))
	}
	const most = 5 // beyond that the regions section lists them
	var names []string
	for _, r := range down[:min(len(down), most)] {
		n := r.Name + " (" + r.Code + ")"
		if !same {
			n += " " + strings.ToLower(statusLabel(r.Status))
		}
		names = append(names, n)
	}
	list := strings.Join(names, ", ")
	if len(down) > most {
		list += fmt.Sprintf(" and %d more", len(down)-most)
	}
	if same {
		return count + " " + regionState(down[0].Status) + ": " + list + "."
	}
	return count + " not operational: " + list + "."
}

// regionState says a region's status after "1 region", and a component's
// after "Storage is".
func regionState(s cdnapi.Status) string {
	switch s {
	case cdnapi.StatusUnderMaintenance:
		return "under maintenance"
	case cdnapi.StatusDegradedPerformance:
		return "with degraded performance"
	case cdnapi.StatusPartialOutage:
		return "in partial outage"
	case cdnapi.StatusMajorOutage:
		return "in major outage"
	}
	return "in state " + statusLabel(s)
}

// until writes the end of an operator's status for people: the time alone
// when it is today (UTC), the day too when later.
func until(end, now time.Time) string {
	end = end.UTC()
	if end.Truncate(24 * time.Hour).Equal(now.UTC().Truncate(24 * time.Hour)) {
		return end.Format("15:04 UTC")
	}
	return end.Format("2 Jan 15:04 UTC")
}

// uptimeText says a component's uptime and over how long it was measured:
// over the windows when the history covers them, and otherwise since the
// history began, so that a young service's figure is not read as a month's.
func uptimeText(u cdnapi.Uptime, since, now time.Time) string {
	short, shortWhole := cdnapi.MeasuredSpan(since, now, cdnapi.UptimeShortWindow)
	long, longWhole := cdnapi.MeasuredSpan(since, now, cdnapi.UptimeLongWindow)
	switch {
	case short <= 0 || u.Short < 0:
		return "no data yet."
	case !shortWhole:
		return fmt.Sprintf("%s since %s, when measuring began (%s).", percent(u.Short),
			since.UTC().Format("2 Jan 2006 15:04 UTC"), duration(now.Add(-short), now))
	case !longWhole:
		return fmt.Sprintf("%s over 30 days; %s over the %s since %s, when measuring began.", percent(u.Short),
			percent(u.Long), duration(now.Add(-long), now), since.UTC().Format("2 Jan 2006"))
	}
	return fmt.Sprintf("%s over 30 days, %s over 90 days.", percent(u.Short), percent(u.Long))
}

// headline is the banner's sentence for the overall status.
func headline(s cdnapi.Status) string {
	switch s {
	case cdnapi.StatusOperational:
		return "All systems operational"
	case cdnapi.StatusUnderMaintenance:
		return "Under maintenance"
	case cdnapi.StatusDegradedPerformance:
		return "Degraded performance"
	case cdnapi.StatusPartialOutage:
		return "Partial outage"
	case cdnapi.StatusMajorOutage:
		return "Major outage"
	}
	return "Unknown"
}

// statusLabel writes a status for people: "partial_outage" is "Partial outage".
func statusLabel(s cdnapi.Status) string {
	t := strings.ReplaceAll(string(s), "_", " ")
	if t == "" {
		return ""
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// percent writes an uptime figure: two decimals, but never 100.00% for a
// day that was not fully up.
func percent(p float64) string {
	if p < 0 {
		return "no data"
	}
	s := fmt.Sprintf("%.2f%%", p)
	if s == "100.00%" && p < 100 {
		s = "99.99%"
	}
	return s
}

// duration writes the time from a to b roughly: "3 min", "2 h 5 min", "4 days".
func duration(a, b time.Time) string {
	d := b.Sub(a).Round(time.Minute)
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// statusDescription is the status page's meta description.
const statusDescription = "The live status of the cdnapi service: each component and region, " +
	"uptime over 30 and 90 days, and recent incidents."
