package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// ErrNumericHost is why a target whose host is a number, but not a
// dotted-quad IPv4 address, is refused: 0x7f000001, 2130706433, 127.1 and
// 0177.0.0.1 are 127.0.0.1 to a browser, curl and inet_aton, but a name to
// Go's resolver, which would ask the machine's DNS about them. Such a host
// is never resolved.
var ErrNumericHost = errors.New("webhook: the target's host is a number but not a dotted-quad IPv4 address; write it as one (127.0.0.1, not 0x7f000001, 2130706433 or 127.1)")

// ErrUnresolved wraps a failed resolution of a target's name at CheckTarget:
// the name may resolve later, and is checked again at each delivery.
var ErrUnresolved = errors.New("webhook: the target's name does not resolve now")

// checkHost checks the host of a target as far as it can without resolving
// it: a numeric host must be a plain IP address (see ErrNumericHost), and,
// unless allowPrivate, neither an internal address nor localhost (or a name
// under it, RFC 6761), with or without a final dot, may be the target. It
// returns the address when the host is one.
func checkHost(host string, allowPrivate bool) (netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if !allowPrivate && refused(a) {
			return a, ErrRefusedAddress
		}
		return a, nil
	}
	name := strings.ToLower(strings.TrimRight(host, "."))
	last := name[strings.LastIndexByte(name, '.')+1:]
	if endsInNumber(last) {
		return netip.Addr{}, ErrNumericHost
	}
	if !allowPrivate && (name == "localhost" || strings.HasSuffix(name, ".localhost")) {
		return netip.Addr{}, ErrRefusedAddress
	}
	return netip.Addr{}, nil
}

// endsInNumber reports whether a host's last label makes it an IPv4 address
// to the URL standard: decimal digits, or 0x and hex digits.
func endsInNumber(label string) bool {
	if label == "" {
		return false
	}
	digits := "0123456789"
	if len(label) >= 2 && label[0] == '0' && label[1]|0x20 == 'x' {
		label, digits = label[2:], "0123456789abcdef"
	}
	for i := 0; i < len(label); i++ {
		if !strings.ContainsRune(digits, rune(label[i]|0x20)) {
			return false
		}
	}
	return true
}

// LookupFunc resolves a name to its addresses, as
// net.DefaultResolver.LookupNetIP("ip", name) does.
type LookupFunc func(ctx context.Context, name string) ([]netip.Addr, error)

// CheckTarget checks a webhook's URL as deliveries will: unless
// allowPrivate, a name is resolved once through lookup, and refused if any
// of its addresses is internal; a numeric host other than a plain IP
// address is refused and never resolved; localhost is refused unless
// allowPrivate. A name that does not resolve is ErrUnresolved, which the
// caller may take as a warning.
func CheckTarget(ctx context.Context, target string, allowPrivate bool, lookup LookupFunc) error {
	u, err := url.Parse(target)
	if err != nil {
		return errors.New("webhook: the URL does not parse")
	}
	host := u.Hostname()
	a, err := checkHost(host, allowPrivate)
	if err != nil || a.IsValid() || allowPrivate {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := lookup(ctx, host)
	if err != nil || len(addrs) == 0 {
		return fmt.Errorf("%w: %s: %v", ErrUnresolved, host, err)
	}
	for _, a := range addrs {
		if refused(a) {
			return fmt.Errorf("%w: %s resolves to %s", ErrRefusedAddress, host, a)
		}
	}
	return nil
}
