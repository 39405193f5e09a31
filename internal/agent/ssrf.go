/*
Copyright 2026 The Ergon Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package agent

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Resolver resolves host names; tests inject one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// blockedPrefixes are the addresses http_fetch never dials unless the host is allow-listed:
// what is not the public internet.
var blockedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network", unspecified
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // carrier-grade NAT
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, cloud metadata 169.254.169.254
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, broadcast
		"::/128",          // unspecified
		"::1/128",         // loopback
		"100::/64",        // discard
		"64:ff9b:1::/48",  // local-use NAT64 (RFC 8215): maps to whatever IPv4 the site chose
		"2001::/32",       // Teredo: tunnels to an IPv4 address it hides
		"::ffff:0:0:0/96", // IPv4-translated (SIIT)
		"2001:db8::/32",   // documentation
		"fc00::/7",        // unique local, AWS metadata fd00:ec2::254
		"fe80::/10",       // link-local
		"ff00::/8",        // multicast
		"fec0::/10",       // site-local (deprecated)
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// embeddedIPv4 are IPv6 ranges that carry an IPv4 address in their low bits, which must be
// checked as IPv4: NAT64 and IPv4-compatible addresses.
var embeddedIPv4 = []netip.Prefix{netip.MustParsePrefix("64:ff9b::/96"), netip.MustParsePrefix("::/96")}

// BlockedAddr says why an address is refused, or "" when it is public.
func BlockedAddr(a netip.Addr) string {
	a = a.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	if a.Is6() {
		for _, p := range embeddedIPv4 {
			if p.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback() {
				b := a.As16()
				if r := BlockedAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})); r != "" {
					return r
				}
			}
		}
		if a.Is6() && a.As16()[0] == 0x20 && a.As16()[1] == 0x02 { // 6to4 2002::/16
			b := a.As16()
			if r := BlockedAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})); r != "" {
				return r
			}
		}
	}
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return fmt.Sprintf("%s is in %s, which is not a public address", a, p)
		}
	}
	return ""
}

// parseHostIP reads a host that is an IP address in any form a resolver might accept:
// dotted, IPv6 (with brackets), and the legacy inet_aton forms such as 2130706433, 0x7f.1 or
// 0177.0.0.1, which resolvers read as IPv4 addresses.
func parseHostIP(host string) (netip.Addr, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i] // zone
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a, true
	}
	parts := strings.Split(h, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 0, 32) // 0x.., 0.. octal, decimal
		if err != nil || p == "" {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	// The last part fills the remaining bytes.
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// guardedDialer dials only public addresses, unless the host is allow-listed. It resolves
// the name itself and dials the address it checked, and its Control checks the socket's
// address again, so a name that resolves differently the second time (DNS rebinding) gains
// nothing.
type guardedDialer struct {
	resolver Resolver
	allow    map[string]bool
	timeout  time.Duration
}

func (g *guardedDialer) allowed(host, port string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	return g.allow[host] || g.allow[net.JoinHostPort(host, port)]
}

// DialContext is an http.Transport's DialContext.
func (g *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	allowed := g.allowed(host, port)
	var ips []netip.Addr
	if ip, ok := parseHostIP(host); ok {
		ips = []netip.Addr{ip}
	} else {
		ips, err = g.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%s resolves to no address", host)
	}
	if !allowed {
		for _, ip := range ips {
			if why := BlockedAddr(ip); why != "" {
				return nil, fmt.Errorf("the address guard refuses %s: %s; only public addresses and the step's allow-listed hosts may be reached", host, why)
			}
		}
	}
	d := &net.Dialer{Timeout: g.timeout, Control: func(_, address string, _ syscall.RawConn) error {
		if allowed {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("the address guard refuses %s: unparsable address", address)
		}
		if why := BlockedAddr(ap.Addr()); why != "" {
			return fmt.Errorf("the address guard refuses %s: %s", host, why)
		}
		return nil
	}}
	var lastErr error
	for _, ip := range ips {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	return nil, lastErr
}
