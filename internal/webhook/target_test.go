package webhook

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cdnapi/cdnapi"
)

// TestCheckTarget is issue 36's: webhooks add refuses what deliveries
// refuse, resolving a name once; a numeric spelling of an address is never
// resolved, and localhost with a final dot is localhost.
func TestCheckTarget(t *testing.T) {
	dns := map[string][]netip.Addr{
		"hooks.example.com":  {netip.MustParseAddr("93.184.216.34")},
		"inside.example.com": {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.1.2.3")},
		"v6.example.com":     {netip.MustParseAddr("::1")},
	}
	for _, tc := range []struct {
		url          string
		allowPrivate bool
		want         error // nil: accepted
		resolves     bool  // the name is looked up
	}{
		{"https://hooks.example.com/in", false, nil, true},
		{"https://inside.example.com/in", false, ErrRefusedAddress, true},
		{"https://v6.example.com/in", false, ErrRefusedAddress, true},
		{"https://nowhere.example.com/in", false, ErrUnresolved, true},
		{"http://93.184.216.34/in", false, nil, false},
		{"http://127.0.0.1:8080/in", false, ErrRefusedAddress, false},
		{"http://[::1]/in", false, ErrRefusedAddress, false},
		{"http://[::ffff:127.0.0.1]/in", false, ErrRefusedAddress, false},
		{"http://169.254.169.254/latest", false, ErrRefusedAddress, false},
		{"http://localhost/in", false, ErrRefusedAddress, false},
		{"http://localhost./in", false, ErrRefusedAddress, false},
		{"http://LocalHost../in", false, ErrRefusedAddress, false},
		{"http://api.localhost/in", false, ErrRefusedAddress, false},
		{"http://0x7f000001/in", false, ErrNumericHost, false},
		{"http://2130706433/in", false, ErrNumericHost, false},
		{"http://127.1/in", false, ErrNumericHost, false},
		{"http://0177.0.0.1/in", false, ErrNumericHost, false},
		{"http://127.0.0.1./in", false, ErrNumericHost, false},
		{"http://evil.example.0x7f/in", false, ErrNumericHost, false},
		// Allowed private targets are not resolved; numeric spellings stay refused.
		{"http://localhost./in", true, nil, false},
		{"http://127.0.0.1/in", true, nil, false},
		{"https://inside.example.com/in", true, nil, false},
		{"http://0x7f000001/in", true, ErrNumericHost, false},
		// Names that only look numeric in part are names.
		{"https://0x.example.com/in", false, ErrUnresolved, true},
		{"https://123.example.com/in", false, ErrUnresolved, true},
	} {
		var looked []string
		lookup := func(_ context.Context, name string) ([]netip.Addr, error) {
			looked = append(looked, name)
			if a, ok := dns[name]; ok {
				return a, nil
			}
			return nil, errors.New("no such host")
		}
		err := CheckTarget(context.Background(), tc.url, tc.allowPrivate, lookup)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckTarget(%s, allowPrivate %v) = %v, want %v", tc.url, tc.allowPrivate, err, tc.want)
		}
		if (len(looked) > 0) != tc.resolves {
			t.Errorf("CheckTarget(%s, allowPrivate %v) looked up %q; want a lookup: %v", tc.url, tc.allowPrivate, looked, tc.resolves)
		}
	}
}

// TestNumericHostNotResolvedAtDelivery: a stored webhook whose host is a
// numeric spelling of 127.0.0.1 fails its attempt as refused, before any
// dial or DNS query, even with private addresses allowed.
func TestNumericHostNotResolvedAtDelivery(t *testing.T) {
	for _, allowPrivate := range []bool{false, true} {
		s := openStore(t)
		r := newReceiver(t, func(int) int { return 200 })
		port := r.URL[strings.LastIndexByte(r.URL, ':')+1:]
		w := cdnapi.Webhook{ID: cdnapi.NewWebhookID(), URL: "http://0x7f000001:" + port + "/hook", Secret: cdnapi.NewWebhookSecret(),
			Events: cdnapi.EventTypes, CreatedAt: time.Now()}
		if err := s.AddWebhook(t.Context(), w); err != nil {
			t.Fatal(err)
		}
		incident(t, s, "API", cdnapi.StatusMajorOutage)
		cfg := testConfig()
		cfg.AllowPrivate = allowPrivate
		start(t, s, cfg)
		waitFor(t, "an attempt", 5*time.Second, func() bool { a, _ := s.DeliveryAttempts(t.Context(), w.ID, 1); return len(a) == 1 })
		a, _ := s.DeliveryAttempts(t.Context(), w.ID, 1)
		if a[0].Result != cdnapi.DeliveryFailed || a[0].Error != "refused: a numeric host that is not a dotted-quad address" {
			t.Errorf("allowPrivate %v: attempt %+v, want refused for its numeric host", allowPrivate, a[0])
		}
		if _, _, _, n := r.snapshot(); n != 0 {
			t.Errorf("allowPrivate %v: the receiver got %d requests", allowPrivate, n)
		}
	}
}
