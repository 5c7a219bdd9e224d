package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Pattern is one --allow-domain value: a host name ("pypi.org", matched exactly),
// "*." and a name ("*.pythonhosted.org": any name beneath it, not the name itself),
// or an IP address. Names are matched without case and without a trailing dot.
type Pattern struct {
	name     string
	wildcard bool
}

// Patterns are the proxy's allowed hosts.
type Patterns []Pattern

// Parse reads one --allow-domain value.
func Parse(s string) (Pattern, error) {
	v := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
	p := Pattern{name: v}
	if rest, ok := strings.CutPrefix(v, "*."); ok {
		p = Pattern{name: rest, wildcard: true}
	}
	if a, err := netip.ParseAddr(strings.Trim(p.name, "[]")); err == nil && !p.wildcard {
		return Pattern{name: a.Unmap().String()}, nil
	}
	if err := checkName(p.name); err != nil {
		return Pattern{}, fmt.Errorf("invalid --allow-domain %q: %w; give a host name (pypi.org), *. and a name (*.pythonhosted.org) or an IP address", s, err)
	}
	return p, nil
}

// checkName accepts a DNS name of letters, digits, hyphens and dots, with at least
// one label, none empty and none over 63 bytes.
func checkName(name string) error {
	if name == "" || len(name) > 253 {
		return errors.New("no host name")
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("an empty or overlong label")
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("the character %q", r)
			}
		}
	}
	return nil
}

// String is the pattern as --allow-domain would give it.
func (p Pattern) String() string {
	if p.wildcard {
		return "*." + p.name
	}
	return p.name
}

// Local says that the pattern names a loopback host itself (an address, or
// "localhost"), so that its resolving to loopback is what was asked for.
func (p Pattern) Local() bool {
	if p.wildcard {
		return false
	}
	_, err := netip.ParseAddr(p.name)
	return err == nil || p.name == "localhost"
}

func (p Pattern) match(host string) bool {
	if p.wildcard {
		return strings.HasSuffix(host, "."+p.name)
	}
	return host == p.name
}

// Match is the first pattern that admits host, if any.
func (ps Patterns) Match(host string) (Pattern, bool) {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.Unmap().String()
	}
	for _, p := range ps {
		if p.match(host) {
			return p, true
		}
	}
	return Pattern{}, false
}

// Strings are the patterns as --allow-domain gave them.
func (ps Patterns) Strings() []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
