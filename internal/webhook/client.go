package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrRefusedAddress is why a delivery to a private, loopback or otherwise
// internal address failed while such addresses are refused.
var ErrRefusedAddress = errors.New("webhook: the target's address is private, loopback or link-local, and refused")

// sharedAddressSpace is 100.64.0.0/10 (RFC 6598), carrier-grade NAT:
// internal to a provider, though netip does not call it private.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// refused reports whether ip is an address an outbound webhook must not
// reach while internal addresses are refused.
func refused(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !ip.IsGlobalUnicast() || ip.IsPrivate() || ip.IsLoopback() || ip.IsLinkLocalUnicast() ||
		sharedAddressSpace.Contains(ip)
}

// newClient returns the HTTP client of deliveries. It takes no proxy from
// the environment, follows a redirect only if it is a 307 or 308 (which
// keep the method and body) to the same scheme, host and port (at most 3),
// and, unless allowPrivate, refuses to connect to an
// internal address: the check runs on the address actually dialled, after
// name resolution, so a name that resolves to one is refused too.
func newClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: min(timeout, 10*time.Second)}
	if !allowPrivate {
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || refused(ap.Addr()) {
				return ErrRefusedAddress
			}
			return nil
		}
	}
	transport := &http.Transport{
		Proxy:                 nil, // only where the operator pointed
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   min(timeout, 10*time.Second),
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			// After a 301, 302 or 303 the client would send an empty GET,
			// whose 2xx would pass for a delivery: the 3xx is returned
			// instead, and send counts it as a failed attempt.
			if c := req.Response.StatusCode; c != http.StatusTemporaryRedirect && c != http.StatusPermanentRedirect {
				return http.ErrUseLastResponse
			}
			first := via[0].URL
			if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
				return fmt.Errorf("webhook: redirect to another host (%s) not followed", req.URL.Host)
			}
			if len(via) > 3 {
				return errors.New("webhook: more than 3 redirects")
			}
			return nil
		},
	}
}

// describe returns the error of an attempt as the deliveries log shows it:
// what went wrong, without the URL, whose query may hold a token.
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case errors.Is(err, ErrRefusedAddress):
		return "refused: private or loopback address"
	case errors.Is(err, ErrNumericHost):
		return "refused: a numeric host that is not a dotted-quad address"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return err.Error()
}
