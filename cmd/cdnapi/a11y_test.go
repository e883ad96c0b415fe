package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/cdnapi/cdnapi"
)

// auditScript returns, for the page it runs in, what a person with weak
// eyes or without colour vision could not read:
//   - text under the contrast of WCAG 2.x AA against what is rendered behind
//     it: 4.5:1, or 3:1 for large text (24px, or 18.66px bold);
//   - a state's colour mark (bars, class d-*) under 3:1 against its
//     surroundings (non-text contrast, WCAG 1.4.11);
//   - an element coloured by a state (classes t-*, b-*, d-*) that does not
//     name the state in its text, so that colour would be the only clue;
//   - a heading that skips a level.
//
// Backgrounds are composited from the element up to the page's white, as
// the browser paints them; hidden elements are skipped.
const auditScript = `(function(){
var out=[];
function rgba(s){var m=s.match(/[\d.]+/g).map(Number);return [m[0],m[1],m[2],m.length>3?m[3]:1]}
function lum(c){return [0,1,2].map(function(i){var v=c[i]/255;return v<=0.03928?v/12.92:Math.pow((v+0.055)/1.055,2.4)})
  .reduce(function(s,v,i){return s+v*[0.2126,0.7152,0.0722][i]},0)}
function ratio(a,b){var x=lum(a),y=lum(b);return (Math.max(x,y)+0.05)/(Math.min(x,y)+0.05)}
function over(c,under){return [0,1,2].map(function(i){return c[i]*c[3]+under[i]*(1-c[3])})}
function behind(el){var layers=[];for(var e=el;e;e=e.parentElement){var c=rgba(getComputedStyle(e).backgroundColor);
  if(c[3]>0){layers.push(c);if(c[3]>=1)break}}
  var r=[255,255,255];for(var i=layers.length-1;i>=0;i--)r=over(layers[i],r);return r}
function name(el){return el.tagName.toLowerCase()+(el.id?'#'+el.id:'')+(el.className?'.'+String(el.className).replace(/ /g,'.'):'')}
function shown(el){return el.getClientRects().length>0&&getComputedStyle(el).visibility==='visible'}
var seen=new Set(),w=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT);
for(var n;(n=w.nextNode());){var el=n.parentElement;if(!n.data.trim()||seen.has(el)||!shown(el))continue;seen.add(el);
  var cs=getComputedStyle(el),bg=behind(el),fg=over(rgba(cs.color),bg),size=parseFloat(cs.fontSize),
    need=(size>=24||(size>=18.66&&+cs.fontWeight>=700))?3:4.5,r=ratio(fg,bg);
  if(r<need)out.push('contrast '+r.toFixed(2)+':1 (want '+need+') of '+name(el)+' "'+n.data.trim().slice(0,40)+'"')}
document.querySelectorAll('[class]').forEach(function(el){el.classList.forEach(function(c){
  var m=/^([tbd])-([a-z_]+)$/.exec(c);if(!m||!shown(el))return;
  var words=m[2].replace(/_/g,' '),text=el.textContent.toLowerCase();
  if(m[1]==='d'){var r=ratio(rgba(getComputedStyle(el).backgroundColor),behind(el.parentElement));
    if(r<3)out.push('contrast '+r.toFixed(2)+':1 (want 3) of the mark '+name(el));
    if(m[2]==='none'?text.indexOf('no data')<0:text.indexOf('% up')<0||(m[2]!=='operational'&&text.indexOf(words)<0))
      out.push(name(el)+' does not say its state in words: "'+text+'"')}
  else if(text.indexOf(words)<0)out.push(name(el)+' does not say its state in words: "'+text+'"')})});
var last=0;document.querySelectorAll('h1,h2,h3,h4,h5,h6').forEach(function(h){var l=+h.tagName[1];
  if(shown(h)&&l>last+1)out.push(name(h)+' "'+h.textContent.trim().slice(0,40)+'" skips from h'+last+' to h'+l);if(shown(h))last=l});
return out})()`

// audit fails t with what keeps the page loaded in b from being read by
// everyone: the findings of auditScript, and, from Chromium's own
// accessibility tree (what a screen reader is given), landmarks that are
// missing or unnamed and focusable elements without a name.
func (b *browser) audit(t *testing.T, what string) {
	t.Helper()
	for _, p := range b.auditProblems(t) {
		t.Errorf("%s: %s", what, p)
	}
}

func (b *browser) auditProblems(t *testing.T) []string {
	t.Helper()
	problems := eval[[]string](t, b, auditScript)
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		t.Fatalf("accessibility tree: %v", err)
	}
	byID := make(map[accessibility.NodeID]*accessibility.Node, len(tree.Nodes))
	for _, n := range tree.Nodes {
		byID[n.NodeID] = n
	}
	roles := map[string]int{}
	for _, n := range tree.Nodes {
		if n.Ignored {
			continue
		}
		role, name := axString(n.Role), axString(n.Name)
		roles[role]++
		switch {
		case (role == "navigation" || role == "region") && name == "":
			problems = append(problems, "a "+role+" landmark without a name")
		case axFocusable(n) && name == "" && !axHasText(byID, n):
			problems = append(problems, fmt.Sprintf("a focusable %s with neither a name nor text (DOM node %d)", role, n.BackendDOMNodeID))
		}
	}
	for _, want := range []string{"banner", "navigation", "main"} {
		if roles[want] == 0 {
			problems = append(problems, "no "+want+" landmark")
		}
	}
	if roles["main"] > 1 {
		problems = append(problems, fmt.Sprintf("%d main landmarks", roles["main"]))
	}
	return problems
}

// axString is the string of an accessibility value, or "".
func axString(v *accessibility.Value) string {
	var s string
	if v != nil && json.Unmarshal(v.Value, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// axHasText reports whether a screen reader is given some text inside n:
// text hidden from it (display:none) is not in the tree, or is ignored.
func axHasText(byID map[accessibility.NodeID]*accessibility.Node, n *accessibility.Node) bool {
	for _, id := range n.ChildIDs {
		c := byID[id]
		if c == nil || c.Ignored && len(c.ChildIDs) == 0 {
			continue
		}
		if !c.Ignored && axString(c.Role) == "StaticText" && axString(c.Name) != "" || axHasText(byID, c) {
			return true
		}
	}
	return false
}

// axFocusable reports whether n can take the keyboard focus.
func axFocusable(n *accessibility.Node) bool {
	for _, p := range n.Properties {
		var on bool
		if p.Name == accessibility.PropertyNameFocusable && json.Unmarshal(p.Value.Value, &on) == nil && on {
			return true
		}
	}
	return false
}

// pageWeights are the most bytes a page may take on the wire, gzip-coded,
// with its headers.
var pageWeights = map[string]int{"/": 10 << 10, "/docs": 150 << 10, "/status": 30 << 10}

// weigh checks what the browser transferred for the page loaded in b, as
// its Navigation Timing says; -v prints the figures.
func (b *browser) weigh(t *testing.T, path string) {
	t.Helper()
	n := eval[[]int](t, b, `(function(){var e=performance.getEntriesByType('navigation')[0];`+
		`return [e.transferSize,e.encodedBodySize,e.decodedBodySize]})()`)
	t.Logf("%s: %d bytes transferred (a %d-byte body, gzip-coded from %d)", path, n[0], n[1], n[2])
	if n[0] == 0 || n[0] > pageWeights[path] || n[1] >= n[2] {
		t.Errorf("%s: %d bytes transferred, limit %d; body %d bytes coded from %d", path, n[0], pageWeights[path], n[1], n[2])
	}
}

// TestPagesAccessible audits /, /docs and /status in Chromium at 375 and
// 1280 pixels, and /status in every state, each set with the CLI: contrast,
// states said in words, headings, landmarks and names (see audit). It first
// shows that the audit finds what it looks for, on a page spoiled on purpose.
// It also weighs each page as transferred (pageWeights).
func TestPagesAccessible(t *testing.T) {
	b := newBrowser(t)
	// Every load goes to the server, so that each page is weighed as a
	// first visit transfers it.
	if _, err := chromedp.Call(b.ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		t.Fatal(err)
	}
	db := "sqlite:" + t.TempDir() + "/a11y.db"
	s := startServe(t, nil, "--db", db, "--demo")

	b.do(t, "load /", chromedp.Navigate(s.api+"/"), chromedp.WaitVisible(chromedp.ID("main")))
	// Styled through the CSSOM: the CSP refuses a style attribute.
	eval[int](t, b, `document.getElementById('main').insertAdjacentHTML('beforeend',`+
		`'<p id="faint">faint</p><h4>deep</h4><p class="t-major_outage">down</p><div tabindex="0"></div>');`+
		`document.getElementById('faint').style.color='#aaa';1`)
	spoiled := strings.Join(b.auditProblems(t), "\n")
	for _, want := range []string{`contrast 2.32:1 (want 4.5) of p#faint "faint"`, "skips from h2 to h4",
		"p.t-major_outage does not say its state", "a focusable generic with neither a name nor text"} {
		if !strings.Contains(spoiled, want) {
			t.Errorf("the audit of a spoiled page does not say %q; it says:\n%s", want, spoiled)
		}
	}

	for _, width := range []int64{1280, 375} {
		b.do(t, "viewport", chromedp.EmulateViewport(width, 800))
		for _, path := range []string{"/", "/docs", "/status"} {
			b.do(t, "load "+path, chromedp.Navigate(s.api+path), chromedp.WaitVisible(chromedp.ID("main")))
			b.audit(t, fmt.Sprintf("%s at %dpx", path, width))
			if width == 1280 {
				b.weigh(t, path)
			}
		}
	}

	// Every state of a component, and so of the banner, as an operator sets
	// it, with a message shown in the incidents.
	for _, st := range cdnapi.Statuses {
		if st == cdnapi.StatusOperational {
			continue
		}
		msg := "Checking the page in state " + string(st) + "."
		if err := run(context.Background(), []string{"status", "set", "Upload Service", string(st), "--message", msg, "--db", db},
			getenvFrom(nil), strings.NewReader(""), io.Discard, io.Discard); err != nil {
			t.Fatal(err)
		}
		b.do(t, "load /status", chromedp.Navigate(s.api+"/status"), chromedp.WaitVisible(chromedp.ID("main")))
		b.waitText(t, "section[aria-labelledby=h-incidents]", msg, 10*time.Second)
		b.audit(t, "/status in "+string(st))
		b.check(t, "/status in "+string(st))
	}
}
