package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientResolver finds the address of the client a request comes from, for
// its rate-limit bucket and its access-log line. X-Forwarded-For is believed
// only from the trusted proxies: anyone else could write any address there
// and get a fresh bucket with every request.
type ClientResolver struct {
	trusted []netip.Prefix
}

// NewClientResolver returns a resolver that believes X-Forwarded-For from
// peers in trusted; with none, the peer's address always counts.
func NewClientResolver(trusted []netip.Prefix) *ClientResolver {
	return &ClientResolver{trusted: trusted}
}

// ParsePrefixes parses a comma-separated list of CIDR prefixes, or plain
// addresses, which stand for themselves alone ("10.0.0.0/8,192.0.2.7").
// Spaces around items are ignored; "" is the empty list.
func ParsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR prefix nor an IP address", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// Resolve returns the client's address, and whether it came from
// X-Forwarded-For. From a trusted peer it walks X-Forwarded-For from the
// right, past trusted proxies, and returns the first address that is not
// one: entries further left were written by whoever the untrusted client
// is, and prove nothing. The address is the zero Addr when the peer's is not
// an IP (never on a TCP listener).
func (c *ClientResolver) Resolve(r *http.Request) (addr netip.Addr, forwarded bool) {
	peer := peerAddr(r.RemoteAddr)
	if c == nil || !c.isTrusted(peer) {
		return peer, false
	}
	client := peer
	values := r.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		hops := strings.Split(values[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[j]))
			if err != nil {
				// Garbage: the last address a proxy vouched for.
				return client, client != peer
			}
			client = a.Unmap()
			if !c.isTrusted(client) {
				return client, true
			}
		}
	}
	return client, client != peer
}

// Trusts reports whether a is the address of a trusted proxy; a nil c
// trusts none.
func (c *ClientResolver) Trusts(a netip.Addr) bool { return c != nil && c.isTrusted(a) }

// trustsAny reports whether c believes any proxy; a nil c believes none.
func (c *ClientResolver) trustsAny() bool { return c != nil && len(c.trusted) > 0 }

func (c *ClientResolver) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the IP of a RemoteAddr ("host:port"), IPv4-mapped IPv6
// addresses unmapped, or the zero Addr.
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap()
	}
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}
