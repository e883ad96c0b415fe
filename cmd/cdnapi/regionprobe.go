package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/cdnapi/cdnapi"
	"github.com/cdnapi/cdnapi/internal/health"
)

// regionProbeHelp is the help of serve's --region-probe.
const regionProbeHelp = "health URL of a point of presence, as CODE=URL (e.g. FRA1=http://10.0.0.7/health): its status is measured, unless an operator set one; repeat the flag, or separate with commas (CDNAPI_REGION_PROBE)"

// regionProbes is the value of --region-probe. The flag may be repeated, and
// each value may hold several CODE=URL separated by commas, which is how
// CDNAPI_REGION_PROBE, one variable, gives several (as --cors-origins and
// --trusted-proxies do). A URL with a comma in it must be escaped (%2C).
type regionProbes []health.RegionProbe

func (p *regionProbes) String() string {
	if p == nil {
		return ""
	}
	parts := make([]string, len(*p))
	for i, r := range *p {
		parts[i] = r.Code + "=" + r.URL
	}
	return strings.Join(parts, ",")
}

// Set adds the probes of one value, checking each: a region code, an
// absolute http or https URL with a host, and a code given once.
func (p *regionProbes) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		code, raw, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("%q: want CODE=URL, such as FRA1=http://10.0.0.7/health", item)
		}
		if !cdnapi.ValidRegionCode(code) {
			return fmt.Errorf("%q: region code %q: want three upper-case letters and a digit, such as FRA1", item, code)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The URL is not echoed: its query may hold a token.
			return fmt.Errorf("region %s: want an absolute http:// or https:// URL with a host", code)
		}
		for _, r := range *p {
			if r.Code == code {
				return fmt.Errorf("region %s is given twice", code)
			}
		}
		*p = append(*p, health.RegionProbe{Code: code, URL: raw})
	}
	return nil
}
