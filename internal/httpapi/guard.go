package httpapi

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdnapi/cdnapi"
)

// KeyVerifier checks API keys (internal/auth's Verifier). Verify must not
// do I/O: it runs on every request.
type KeyVerifier interface {
	// Verify returns the identity (ID, project and scope) of key when it
	// may be used at now, the time of the request: known, neither revoked
	// nor expired. A key without a scope is read.
	Verify(key string, now time.Time) (cdnapi.KeyIdentity, bool)
}

// GuardConfig configures NewGuard.
type GuardConfig struct {
	// Keys, when set, makes an API key required on the guarded routes;
	// files are then listed for the key's project. Nil: keys are neither
	// required nor looked at.
	Keys KeyVerifier
	// Limiter, when set, limits requests per client: per API key when
	// one was verified, else per client address. Nil: no limits.
	Limiter cdnapi.RateLimiter
	// Clients finds the client address; nil believes the peer only.
	Clients *ClientResolver
}

// guardedRoutes are the routes that keys apply to: the lists, by what each
// lists. Every other route of the public listeners (the status, its
// history, the OpenAPI document and the human pages) is public: it needs
// no key, and when limits are on it is limited per client address, in a
// bucket of its own. The admin listener has no guard.
//
// The lists read, so they take read keys only: a key of another scope
// (upload, edge) is valid, but refused with 403 permission_denied.
var guardedRoutes = map[string]string{
	"/api/v1/files":   "files",
	"/api/v1/regions": "regions",
	"/api/v1/assets":  "assets",
}

// The authentication errors of API.md.
var (
	errAuthRequired = cdnapi.Errorf(cdnapi.CodeAuthenticationRequired, "",
		"this endpoint needs an API key: send the header Authorization: Bearer <key>")
	errKeyInvalid = cdnapi.Errorf(cdnapi.CodeAPIKeyInvalid, "",
		"the API key is not valid: it is unknown, revoked or expired")
	errRateLimited = cdnapi.Errorf(cdnapi.CodeRateLimited, "",
		"too many requests; retry after the number of seconds in the Retry-After header")
	errTwoCredentials = cdnapi.Errorf(cdnapi.CodeParameterInvalid, "",
		"send one Authorization header, not several: which one is the credential is ambiguous")
)

// publicBucket starts the bucket of a client address on the public routes,
// so that reading the status page does not use up the address's budget
// for the lists, nor the other way round.
const publicBucket = "public "

// guard authenticates and rate-limits the guarded routes. A request goes
// through its steps in order: note the client address for the access log,
// read the key, count the request against its bucket, refuse it or let it
// through with the key's project in the request state.
type guard struct {
	keys    KeyVerifier
	limiter cdnapi.RateLimiter
	clients *ClientResolver
	// policy is the RateLimit-Policy header, which is the same on every
	// answer of a limiter, made once rather than per request.
	policy atomic.Pointer[policyHeader]
}

// NewGuard returns a Config.Guard that authenticates and rate-limits the
// guarded routes, and rate-limits the public ones per client address.
//
// A request is counted against its bucket before its key is judged, so
// that a client guessing keys is limited like any other; a request without
// a valid key is counted by its address. Every answer of a limited route
// carries RateLimit-Policy and RateLimit; a refused one is 429 rate_limited
// with Retry-After, 401 with WWW-Authenticate, or 400 for two
// Authorization headers. An answer for a key is made private.
func NewGuard(cfg GuardConfig) func(route string, next http.Handler) http.Handler {
	g := &guard{keys: cfg.Keys, limiter: cfg.Limiter, clients: cfg.Clients}
	return g.wrap
}

// wrap is the Config.Guard: it guards next as route needs, when there is
// anything to guard it with.
func (g *guard) wrap(route string, next http.Handler) http.Handler {
	switch {
	case guardedRoutes[route] != "" && (g.keys != nil || g.limiter != nil):
		lists := guardedRoutes[route]
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.serve(w, r, lists, next)
		})
	case guardedRoutes[route] == "" && g.limiter != nil:
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			g.servePublic(w, r, next)
		})
	}
	return next
}

// servePublic limits a request of a public route by its client address.
func (g *guard) servePublic(w http.ResponseWriter, r *http.Request, next http.Handler) {
	addr, resolved := g.forwardedClient(r)
	if g.take(w, r, publicBucket+g.addressBucket(r, addr, resolved), requestTime(r.Context())) {
		next.ServeHTTP(w, r)
	}
}

// serve runs one request of a guarded route, which lists what lists
// ("files"), through the guard.
func (g *guard) serve(w http.ResponseWriter, r *http.Request, lists string, next http.Handler) {
	now := requestTime(r.Context())
	addr, resolved := g.forwardedClient(r)
	key, authErr := g.authenticate(r, now)
	bucket := key.ID // key IDs start with "key_", which no address does
	if bucket == "" && g.limiter != nil {
		bucket = g.addressBucket(r, addr, resolved)
	}
	if !g.take(w, r, bucket, now) {
		return
	}
	if authErr != nil {
		refuseAuth(w, r, authErr)
		return
	}
	if key.ID != "" {
		// Noted before the scope is judged, so that the access log names
		// the key that was refused too.
		r = withKey(r, key.ID, key.Project)
		if key.Scope != cdnapi.ScopeRead {
			writeError(w, r, errScope(key, lists))
			return
		}
		w = privateAnswer(w, r)
	}
	next.ServeHTTP(w, r)
}

// errScope is the 403 of a valid key whose scope is not read, on a route
// that lists what lists. It says how to get a key that may: the project is
// the key's own, which ValidProject keeps to characters safe to echo.
func errScope(key cdnapi.KeyIdentity, lists string) *cdnapi.Error {
	return cdnapi.Errorf(cdnapi.CodePermissionDenied, "",
		"this key's scope is %s; listing %s needs a key of scope read: cdnapi keys create --project %s --scope read",
		key.Scope, lists, key.Project)
}

// forwardedClient resolves the client address when a proxy is trusted,
// and records it for the access log when a proxy forwarded it: without
// trusted proxies the access log shows the peer, which is right, and the
// address is found only if a bucket needs it. resolved reports whether
// addr was looked for.
func (g *guard) forwardedClient(r *http.Request) (addr netip.Addr, resolved bool) {
	if !g.clients.trustsAny() {
		return netip.Addr{}, false
	}
	addr, forwarded := g.clients.Resolve(r)
	if forwarded {
		setClientAddr(r.Context(), addr.String())
	}
	return addr, true
}

// authenticate returns the identity of the request's key, or the error
// that refuses it; with no verifier, nothing.
func (g *guard) authenticate(r *http.Request, now time.Time) (cdnapi.KeyIdentity, error) {
	if g.keys == nil {
		return cdnapi.KeyIdentity{}, nil
	}
	// The key is canonical: no need for Get to canonicalise it.
	var header string
	switch v := r.Header["Authorization"]; len(v) {
	case 0:
	case 1:
		header = v[0]
	default:
		return cdnapi.KeyIdentity{}, errTwoCredentials
	}
	return verifyBearer(g.keys, header, now)
}

// addressBucket is the bucket of a request without a valid key: its
// client address, found now unless forwardedClient found it already. An
// IPv4 client is its address; an IPv6 one is its /64, the least a site or
// a home is given, so that the many addresses one network has cannot each
// get a bucket of their own.
func (g *guard) addressBucket(r *http.Request, addr netip.Addr, resolved bool) string {
	if !resolved {
		addr, _ = g.clients.Resolve(r)
	}
	switch {
	case !addr.IsValid():
		return r.RemoteAddr
	case addr.Is6():
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}

// take counts the request against bucket and sets the rate-limit headers.
// It answers a refused request with 429 and returns false.
func (g *guard) take(w http.ResponseWriter, r *http.Request, bucket string, now time.Time) bool {
	if g.limiter == nil {
		return true
	}
	d := g.limiter.Take(r.Context(), bucket, now)
	if !d.Limited {
		return true
	}
	setRateHeaders(w.Header(), g.policyFor(d), d)
	if d.Allowed {
		return true
	}
	w.Header().Set("Retry-After", strconv.Itoa(max(1, ceilSeconds(d.RetryAfter))))
	writeError(w, r, errRateLimited)
	return false
}

// policyFor returns the RateLimit-Policy of d's policy, made again only
// when the policy changed.
func (g *guard) policyFor(d cdnapi.RateDecision) *policyHeader {
	p := g.policy.Load()
	if p == nil || p.burst != d.Burst || p.window != d.Window {
		p = newPolicyHeader(d)
		g.policy.Store(p)
	}
	return p
}

// privateAnswer returns w for the answer of a request with a key: that
// answer is for the key's holder only, so it must not be kept by a shared
// cache, nor given to a request without that key. Whatever Cache-Control
// the handler sets, "public" becomes "private", and Vary names
// Authorization.
func privateAnswer(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	if st := state(r.Context()); st != nil {
		st.private = privateWriter{ResponseWriter: w}
		return &st.private
	}
	return &privateWriter{ResponseWriter: w}
}

// privateWriter makes an answer private as its header is written.
type privateWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *privateWriter) WriteHeader(status int) {
	if !w.wrote {
		w.wrote = true
		makePrivate(w.Header())
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *privateWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *privateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// privateCacheControl maps a public Cache-Control to its private form;
// the handlers have a handful, so each is made once.
var privateCacheControl sync.Map // string → []string

// varyAuthorization is the Vary of a private answer, shared by them.
const varyAuthorization = "Authorization"

func makePrivate(h http.Header) {
	if cc := h["Cache-Control"]; len(cc) == 1 && strings.HasPrefix(cc[0], "public") {
		v, ok := privateCacheControl.Load(cc[0])
		if !ok {
			v, _ = privateCacheControl.LoadOrStore(cc[0], []string{"private" + strings.TrimPrefix(cc[0], "public")})
		}
		h["Cache-Control"] = v.([]string)
	}
	for _, v := range h["Vary"] {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), varyAuthorization) {
				return
			}
		}
	}
	h.Add("Vary", varyAuthorization)
}

// refuseAuth answers a request whose key is missing or not valid.
func refuseAuth(w http.ResponseWriter, r *http.Request, err error) {
	if err == errKeyInvalid {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cdnapi", error="invalid_token"`)
	}
	writeError(w, r, err)
}

// withKey records the request's key for the access log and its project for
// the handlers, in the request state.
func withKey(r *http.Request, id, project string) *http.Request {
	if st := state(r.Context()); st != nil {
		// The state is already in the context: no new context and
		// request to allocate on the hot path.
		st.keyID, st.project = id, project
		return r
	}
	return r.WithContext(withProject(r.Context(), project))
}

// verifyBearer checks the Authorization header: a request without bearer
// credentials needs them; one with a bad key has an invalid one.
func verifyBearer(keys KeyVerifier, header string, now time.Time) (cdnapi.KeyIdentity, error) {
	scheme, key, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return cdnapi.KeyIdentity{}, errAuthRequired
	}
	id, ok := keys.Verify(strings.TrimSpace(key), now)
	if !ok {
		return cdnapi.KeyIdentity{}, errKeyInvalid
	}
	return id, nil
}

// setRateHeaders sets the RateLimit-Policy and RateLimit headers of the
// IETF httpapi draft, as API.md gives them. The values are shared by the
// answers that carry the same one (net/http only reads them), so that a
// client's steady stream of requests costs no allocation here. The keys are
// written in canonical form, which saves canonicalising them.
func setRateHeaders(h http.Header, p *policyHeader, d cdnapi.RateDecision) {
	h["Ratelimit-Policy"] = p.value
	reset := d.Reset
	if !d.Allowed {
		reset = d.RetryAfter
	}
	h["Ratelimit"] = p.rateLimit(d.Remaining, ceilSeconds(reset))
}

// policyHeader is the RateLimit-Policy header of one policy, and the
// RateLimit headers of its answers made so far, in a small direct-mapped
// cache: at most one value per slot, replaced when another needs the slot.
type policyHeader struct {
	burst  int
	window time.Duration
	value  []string
	recent [256]atomic.Pointer[rateLimitValue]
}

// rateLimitValue is a RateLimit header: r tokens left, full in t seconds.
type rateLimitValue struct {
	r, t  int
	value []string
}

// newPolicyHeader states d's token bucket (Burst tokens, full again in
// Window) as the draft's quota q per window w: w is the time the bucket
// takes to fill, in whole seconds (at least one), and q what it lets through
// in w at its steady rate. When the burst fills in whole seconds that is
// the burst itself (rate 50, burst 100: q=100;w=2); when it fills faster
// (rate 100, burst 50), q is the rate, which the burst alone would
// understate by half: what can be sent at once is RateLimit's r, never
// more than the burst.
func newPolicyHeader(d cdnapi.RateDecision) *policyHeader {
	w := max(1, ceilSeconds(d.Window))
	q := d.Burst
	if d.Window > 0 {
		q = int(math.Round(float64(d.Burst) * float64(w) * float64(time.Second) / float64(d.Window)))
	}
	v := `"default";q=` + strconv.Itoa(q) + ";w=" + strconv.Itoa(w)
	return &policyHeader{burst: d.Burst, window: d.Window, value: []string{v}}
}

// rateLimit returns the RateLimit header of r tokens left and t seconds.
func (p *policyHeader) rateLimit(r, t int) []string {
	slot := &p.recent[uint(r*7+t)%uint(len(p.recent))]
	if v := slot.Load(); v != nil && v.r == r && v.t == t {
		return v.value
	}
	var buf [64]byte
	b := append(buf[:0], `"default";r=`...)
	b = strconv.AppendInt(b, int64(r), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, int64(t), 10)
	v := &rateLimitValue{r: r, t: t, value: []string{string(b)}}
	slot.Store(v)
	return v.value
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}
