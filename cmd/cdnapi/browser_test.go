package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/cdnapi/cdnapi/internal/pgtest"
)

// chromiumPath is Debian's chromium, which .ci/run installs. The tests never
// download a browser.
const chromiumPath = "/usr/bin/chromium"

// browser is a headless Chromium driven over the DevTools protocol, with
// every console error, uncaught exception and CSP violation of its pages
// collected.
type browser struct {
	ctx      context.Context
	mu       sync.Mutex
	problems []string
}

// newBrowser starts Chromium with a fresh profile and no network beyond
// what the pages ask for. It skips t without Chromium, except under CI=true.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := exec.LookPath(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is not installed at %s (apt-get install -y chromium)", chromiumPath)
		}
		t.Skipf("chromium is not installed at %s", chromiumPath)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.WindowSize(1280, 800),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	// Console errors and warnings, uncaught exceptions, and the browser
	// log's errors (failed loads, CSP reports) are all problems.
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
				b.report("console %s: %s %s", m.Type, m.Text, m.URL)
			}
		}
	}()
	// securitypolicyviolation reports every CSP violation to the page; the
	// collector is installed by the protocol, which the CSP does not
	// govern, before any of the page's own code runs.
	const collect = `window.__csp=[];document.addEventListener('securitypolicyviolation',` +
		`function(e){window.__csp.push(e.violatedDirective+' '+e.blockedURI)});`
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: collect})
	if err == nil {
		// A headless page has no window focus, so :focus would never
		// match; emulate a focused page, as a person's browser is.
		_, err = chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
	}
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return b
}

func (b *browser) report(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

// check fails t with every problem reported since the last check, and with
// the CSP violations the current page collected.
func (b *browser) check(t *testing.T, what string) {
	t.Helper()
	csp, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`window.__csp||[]`))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	b.mu.Lock()
	problems := append(b.problems, csp...)
	b.problems = nil
	b.mu.Unlock()
	for _, p := range problems {
		t.Errorf("%s: %s", what, p)
	}
}

// do runs actions with a deadline.
func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitText waits until the text of the element at sel contains want, or
// fails t after within.
func (b *browser) waitText(t *testing.T, sel, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var text string
	for time.Since(start) < within {
		text = eval[string](t, b, fmt.Sprintf(`(document.querySelector(%q)||{}).innerText||""`, sel))
		if strings.Contains(text, want) {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not show %q within %v; it shows %q", sel, want, within, text)
	return 0
}

// midWordBreaks lists the component names of /docs (in the operations'
// tables, the contents and the headings) that the browser broke onto a new
// line inside a word. The names are written with <wbr> between their words,
// so each text node is a word: a line that starts inside one is a break in
// the middle of a word, as "FilesNotModifi|ed" once was.
const midWordBreaks = `(function(){var out=[];
document.querySelectorAll('.op table a,nav.toc a,#main article:not(.op) h3').forEach(function(el){
  var w=document.createTreeWalker(el,NodeFilter.SHOW_TEXT),n;
  while((n=w.nextNode())){var r=document.createRange(),top=null;
    for(var i=0;i<n.data.length;i++){r.setStart(n,i);r.setEnd(n,i+1);var rs=r.getClientRects();if(!rs.length)continue;
      var y=rs[0].top;if(top!==null&&y>top+2){out.push(el.textContent+' at '+i+' of '+n.data);break}top=y}}});
return out})()`

// overflow returns how many CSS pixels the page is wider than the viewport.
func (b *browser) overflow(t *testing.T) int {
	t.Helper()
	return eval[int](t, b, `document.documentElement.scrollWidth-window.innerWidth`)
}

// TestPagesInBrowser loads /, /docs and /status in Chromium against a real
// serve on PostgreSQL: no console errors or CSP violations, no horizontal
// overflow at 375 and 1280 pixels, a maintenance set with the CLI shown with
// its message, and a stop of the database shown on the page within its
// refresh interval, then the recovery. Screenshots go to the test's artifact
// directory: kept under the -artifacts flag's output directory when it is
// given (go test -artifacts -outputdir DIR), removed after the test otherwise;
// -v prints their paths.
func TestPagesInBrowser(t *testing.T) {
	b := newBrowser(t)
	cluster := pgtest.Start(t)
	dsn := cluster.NewDatabase(t)
	// The status is evaluated every 100ms (startServe), so the page
	// refreshes every second, its shortest interval.
	s := startServe(t, nil, "--db", dsn, "--demo")
	t.Cleanup(func() { s.stop() })
	shots := t.ArtifactDir()
	screenshot := func(name string, full bool) {
		shot := chromedp.CaptureScreenshot()
		if full {
			shot = chromedp.FullScreenshot(100)
		}
		png, err := chromedp.Run(b.ctx, shot)
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(shots, name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", path)
	}

	// The problem collector catches a violation: an image from elsewhere.
	b.do(t, "load /", chromedp.Navigate(s.api+"/"))
	eval[int](t, b, `var i=new Image();i.src='http://192.0.2.1/x.png';document.body.append(i);1`)
	var csp []string // the violation is reported when the browser gets to it: awaited, not slept for
	for deadline := time.Now().Add(30 * time.Second); len(csp) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		csp = eval[[]string](t, b, `window.__csp||[]`)
	}
	if len(csp) == 0 || !strings.Contains(csp[0], "img-src") {
		t.Fatalf("the collector saw %v, want the img-src violation", csp)
	}
	b.mu.Lock()
	b.problems = nil // the violation's console error too
	b.mu.Unlock()

	for _, width := range []int64{1280, 375} {
		b.do(t, "viewport", chromedp.EmulateViewport(width, 800))
		for _, path := range []string{"/", "/docs", "/status"} {
			b.do(t, "load "+path, chromedp.Navigate(s.api+path), chromedp.WaitVisible(chromedp.ID("main")))
			if px := b.overflow(t); px > 0 {
				t.Errorf("%s at %dpx: %dpx of horizontal overflow", path, width, px)
			}
			b.check(t, fmt.Sprintf("%s at %dpx", path, width))
			if path == "/docs" {
				// Names break between their words only, at every width.
				if broken := eval[[]string](t, b, midWordBreaks); len(broken) > 0 {
					t.Errorf("/docs at %dpx: names broken inside a word: %v", width, broken)
				}
				// No table is wider than the page, to be scrolled sideways.
				if n := eval[int](t, b, `[].filter.call(document.querySelectorAll('.scroll'),`+
					`function(e){return e.scrollWidth>e.clientWidth+1}).length`); n > 0 {
					t.Errorf("/docs at %dpx: %d tables wider than the page", width, n)
				}
				// On a narrow screen the contents come first.
				if width == 375 && !eval[bool](t, b, `document.querySelector('nav.toc').getBoundingClientRect().top<`+
					`document.getElementById('main').getBoundingClientRect().top`) {
					t.Error("/docs at 375px: the contents come after the reference")
				}
				b.do(t, "scroll", chromedp.ScrollIntoView(chromedp.ID("listIncidents")))
				screenshot(fmt.Sprintf("docs-%d", width), false) // an operation of the reference
			}
		}
	}

	// An operator's maintenance, set with the CLI, appears with its message
	// and its end; a region's partial outage in the banner and the
	// incidents.
	const msg = "Moving the upload fleet to new racks; uploads resume by 18:00 UTC."
	until := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
	for _, args := range [][]string{
		{"status", "set", "Upload Service", "under_maintenance", "--message", msg, "--until", until.Format(time.RFC3339)},
		{"regions", "set-status", "FRA1", "partial_outage"},
	} {
		if err := run(context.Background(), append(args, "--db", dsn), getenvFrom(nil), strings.NewReader(""), io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	b.do(t, "viewport", chromedp.EmulateViewport(1280, 800))
	b.do(t, "load /status", chromedp.Navigate(s.api+"/status"), chromedp.WaitVisible(chromedp.ID("main")))
	const incidents = "section[aria-labelledby=h-incidents]"
	took := b.waitText(t, incidents, msg, 10*time.Second)
	b.waitText(t, ".banner", "Under maintenance", time.Second)
	b.waitText(t, ".banner", "1 region in partial outage: Frankfurt (FRA1).", 5*time.Second)
	b.waitText(t, incidents, "Region FRA1: Partial outage", 5*time.Second)
	b.waitText(t, "section[aria-labelledby=h-components]", "Under maintenance until "+until.Format("15:04"), time.Second)
	b.waitText(t, "ul.legend", "No data", time.Second)
	t.Logf("maintenance shown %v after the page was loaded", took.Round(time.Millisecond))
	screenshot("status-1280", true)
	b.do(t, "viewport", chromedp.EmulateViewport(375, 812))
	// A day's figure shows on keyboard focus, within the screen.
	// Focus and blur run in the page, not as chromedp.Focus/Blur: those
	// find the node and act on it in two protocol calls, and the page's
	// refresh can swap main out in between ("Could not find node with given id").
	if !eval[bool](t, b, `(function(){var e=document.querySelector('ol.bars li:last-child');e.focus();return document.activeElement===e})()`) {
		t.Fatal("the last uptime bar did not take focus")
	}
	tip := eval[string](t, b, `(function(){var s=document.activeElement.querySelector('span');`+
		`return s.getBoundingClientRect().width>1?s.innerText:''})()`)
	if !strings.Contains(tip, "% up") {
		t.Errorf("a focused bar shows %q, want its figure", tip)
	}
	if px := b.overflow(t); px > 0 {
		t.Errorf("with a figure shown at 375px: %dpx of horizontal overflow", px)
	}
	screenshot("status-375", true)
	eval[bool](t, b, `(function(){document.activeElement.blur();return true})()`) // the refresh waits while focus is in the page
	b.check(t, "maintenance")

	// Storage stops under the running server: within the refresh interval
	// (1s) after the evaluator notices (100ms, plus a 1s ping timeout), the
	// page shows the outage and says the history is unavailable.
	b.do(t, "viewport", chromedp.EmulateViewport(1280, 800))
	stopped := time.Now()
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	b.waitText(t, ".banner", "Major outage", 5*time.Second)
	took = time.Since(stopped)
	b.waitText(t, "#history-unavailable", "History is unavailable", 2*time.Second)
	t.Logf("outage shown %v after the database began to stop", took.Round(time.Millisecond))
	screenshot("status-outage-1280", false)
	if err := cluster.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	b.waitText(t, ".banner", "Under maintenance", 10*time.Second)
	took = time.Since(restarted)
	b.waitText(t, incidents, msg, 2*time.Second)
	// The outage itself was kept in memory while the database was down,
	// and recorded once it was back.
	b.waitText(t, incidents, "Storage: Major outage", 5*time.Second)
	t.Logf("recovery shown %v after the database began to restart", took.Round(time.Millisecond))
	b.check(t, "outage and recovery")
}
