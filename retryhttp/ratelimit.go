package retryhttp

import (
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/seed-b8c8f69d/retry"
)

// The rate-limit headers a 429 or 503 response may carry, besides
// Retry-After. The rules for reading them, and their precedence, are on
// Transport ("Pushback").
const (
	headerRetryAfterMs   = "Retry-After-Ms"
	headerRateLimit      = "RateLimit"
	headerRateLimitPol   = "RateLimit-Policy"
	headerRateLimitReset = "RateLimit-Reset"
	headerXReset         = "X-RateLimit-Reset"
	headerXRemaining     = "X-RateLimit-Remaining"
)

// epochSeconds is the smallest reset value read as a Unix time rather than
// a number of seconds from now: 10⁸ seconds is March 1973 as a date, older
// than any of these headers, and more than 3 years as a delay, longer than
// any server means. It is not 10⁹ (2001), so that a clock that starts in
// 2000, as testing/synctest's does, still reads Unix times as such.
// epochMillis is the bound for Unix times in milliseconds: 10¹¹ is 1973 in
// milliseconds, and the year 5138 in seconds.
const (
	epochSeconds = 1e8
	epochMillis  = 1e11
)

// withPushback marks err with the wait that the headers h of a 429 or 503
// response ask for, or returns err as it is if they ask for none, by the
// rules and precedence stated on Transport ("Pushback").
func withPushback(err error, h http.Header) error {
	if v := h.Get(headerRetryAfterMs); v != "" {
		if d, ok := parseDecimal(v, time.Millisecond); ok {
			return retry.RetryAfter(err, d)
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if ra, ok := parseRetryAfter(v); ok {
			return ra.mark(err)
		}
	}
	if rl := h.Values(headerRateLimit); len(rl) > 0 {
		if d, ok := parseRateLimit(strings.Join(rl, ","), strings.Join(h.Values(headerRateLimitPol), ",")); ok {
			return retry.RetryAfter(err, d)
		}
	}
	v := h.Get(headerXReset)
	if v == "" {
		v = h.Get(headerRateLimitReset)
	}
	if v != "" && !quotaLeft(h.Get(headerXRemaining)) {
		if ra, ok := parseReset(v); ok {
			return ra.mark(err)
		}
	}
	return err
}

// quotaLeft reports whether an X-RateLimit-Remaining value v says that
// quota is left: a reset time is then not what the server waits for.
func quotaLeft(v string) bool {
	n, ok := parseDecimal(v, time.Second)
	return ok && n > 0
}

// parseReset parses an X-RateLimit-Reset value: a number of seconds, read
// as a Unix time from epochSeconds on (in milliseconds from epochMillis),
// else as seconds from now. A date past the Durations a Time can add
// saturates, some 292 years from 1970.
func parseReset(v string) (retryAfter, bool) {
	ms, ok := parseDecimal(v, time.Millisecond)
	if !ok {
		return retryAfter{}, false
	}
	secs, _ := parseDecimal(v, time.Second)
	switch x := ms / time.Millisecond; {
	case x >= epochMillis:
		return retryAfter{at: time.UnixMilli(0).Add(ms), absolute: true}, true
	case x >= epochSeconds:
		return retryAfter{at: time.Unix(0, 0).Add(secs), absolute: true}, true
	}
	return retryAfter{delay: secs}, true
}

// parseDecimal parses digits with an optional fraction (as in "1.25"), in
// units of unit, with surrounding spaces and tabs ignored, saturating at the
// largest Duration; digits past a nanosecond count for nothing. Anything
// else, including a sign, an exponent, or an empty part before or after the
// point, reports false.
func parseDecimal(v string, unit time.Duration) (time.Duration, bool) {
	whole, frac, dotted := strings.Cut(strings.Trim(v, " \t"), ".")
	if whole == "" || dotted && frac == "" {
		return 0, false
	}
	var n int64
	saturated := false
	for i := 0; i < len(whole); i++ {
		c := whole[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (math.MaxInt64-9)/10 {
			saturated = true
		} else {
			n = n*10 + int64(c-'0')
		}
	}
	var f time.Duration
	scale := unit
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		scale /= 10
		f += time.Duration(c-'0') * scale
	}
	if saturated || n > math.MaxInt64/int64(unit) {
		return math.MaxInt64, true
	}
	d := time.Duration(n) * unit
	if d > math.MaxInt64-f {
		return math.MaxInt64, true
	}
	return d + f, true
}

// A policy is one member of a RateLimit or RateLimit-Policy field: a name
// and the integer parameters this package reads.
type policy struct {
	name       string
	r, t, w    int64  // -1 when absent
	dictionary bool   // a draft 07 dictionary member (key=value) rather than a named item
	key        string // the dictionary member's key
	value      int64  // and its value, -1 if not a non-negative integer
}

// parseRateLimit returns the wait that a RateLimit field rl asks for, with
// RateLimit-Policy field pol for the windows of policies without a reset
// time: the longest among the policies with no quota left. It reports false
// if no such policy says how long to wait, or if rl is malformed.
func parseRateLimit(rl, pol string) (time.Duration, bool) {
	members, ok := parseList(rl)
	if !ok {
		return 0, false
	}
	var wait int64 = -1
	// Draft 07: RateLimit: limit=100, remaining=0, reset=30.
	remaining, reset := int64(-1), int64(-1)
	for _, m := range members {
		if !m.dictionary {
			continue
		}
		switch m.key {
		case "remaining":
			remaining = m.value
		case "reset":
			reset = m.value
		}
	}
	if remaining == 0 && reset >= 0 {
		wait = reset
	}
	var policies []policy
	for _, m := range members {
		if m.dictionary || m.r != 0 {
			continue
		}
		t := m.t
		if t < 0 {
			if policies == nil {
				policies, _ = parseList(pol)
			}
			for _, p := range policies {
				if !p.dictionary && p.name == m.name && p.w >= 0 {
					t = p.w
				}
			}
		}
		wait = max(wait, t)
	}
	if wait < 0 {
		return 0, false
	}
	if wait >= int64(math.MaxInt64/time.Second) {
		return math.MaxInt64, true
	}
	return time.Duration(wait) * time.Second, true
}

// parseList parses a structured field List (RFC 9651) of items with
// parameters, as RateLimit and RateLimit-Policy are, keeping each member's
// name (a string or token) and its integer parameters r, t and w; other
// parameters, and inner lists, are skipped. A draft 07 dictionary member
// (key=integer) is kept as such. It reports false on malformed input.
func parseList(v string) ([]policy, bool) {
	var out []policy
	p := sfParser{s: v}
	for {
		p.skipOWS()
		if p.done() {
			return out, true
		}
		m, ok := p.member()
		if !ok {
			return nil, false
		}
		out = append(out, m)
		p.skipOWS()
		if p.done() {
			return out, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

// sfParser reads structured field text; it never reads past s.
type sfParser struct {
	s   string
	pos int
}

func (p *sfParser) done() bool { return p.pos >= len(p.s) }

func (p *sfParser) eat(c byte) bool {
	if p.pos < len(p.s) && p.s[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *sfParser) skipOWS() {
	for p.pos < len(p.s) && (p.s[p.pos] == ' ' || p.s[p.pos] == '\t') {
		p.pos++
	}
}

// member reads one list member: an item (string, token or integer) or an
// inner list, then its parameters.
func (p *sfParser) member() (policy, bool) {
	m := policy{r: -1, t: -1, w: -1}
	switch {
	case p.eat('('):
		// An inner list: skip its items; not a policy this package reads.
		for !p.eat(')') {
			p.skipOWS()
			if _, _, ok := p.bareItem(); !ok {
				return m, false
			}
			if !p.params(nil) {
				return m, false
			}
		}
		m.name = "\x00" // matches no policy
	default:
		name, _, ok := p.bareItem()
		if !ok {
			return m, false
		}
		if p.eat('=') {
			// Draft 07's dictionary: key=value.
			_, value, ok := p.bareItem()
			if !ok {
				return m, false
			}
			m.dictionary, m.key, m.value = true, name, value
		} else {
			m.name = name
		}
	}
	return m, p.params(&m)
}

// params reads the parameters after an item, recording r, t and w in m
// (when m is not nil) if they are non-negative integers.
func (p *sfParser) params(m *policy) bool {
	for p.eat(';') {
		p.skipOWS()
		key := p.key()
		if key == "" {
			return false
		}
		value := int64(-1)
		if p.eat('=') {
			var ok bool
			if _, value, ok = p.bareItem(); !ok {
				return false
			}
		}
		if m == nil {
			continue
		}
		switch key {
		case "r":
			m.r = value
		case "t":
			m.t = value
		case "w":
			m.w = value
		}
	}
	return true
}

// key reads a parameter key: lowercase letters, digits, '_', '-', '.', '*'.
func (p *sfParser) key() string {
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c >= 'a' && c <= 'z' || c == '*' || p.pos > start && (c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			p.pos++
			continue
		}
		break
	}
	return p.s[start:p.pos]
}

// bareItem reads a string, a token, a number, a byte sequence or a boolean.
// For a string or token it
// returns the text; for a non-negative integer its value (saturated), and
// -1 for anything else.
func (p *sfParser) bareItem() (string, int64, bool) {
	if p.done() {
		return "", -1, false
	}
	switch c := p.s[p.pos]; {
	case c == '"':
		p.pos++
		var b strings.Builder
		for !p.done() {
			c := p.s[p.pos]
			p.pos++
			switch {
			case c == '\\':
				if p.done() {
					return "", -1, false
				}
				b.WriteByte(p.s[p.pos])
				p.pos++
			case c == '"':
				return b.String(), -1, true
			case c < 0x20 || c > 0x7e:
				return "", -1, false
			default:
				b.WriteByte(c)
			}
		}
		return "", -1, false
	case c >= '0' && c <= '9' || c == '-':
		start := p.pos
		p.pos++
		for !p.done() && (p.s[p.pos] >= '0' && p.s[p.pos] <= '9' || p.s[p.pos] == '.') {
			p.pos++
		}
		text := p.s[start:p.pos]
		if text[0] == '-' || strings.IndexByte(text, '.') >= 0 {
			if text == "-" || text[len(text)-1] == '.' {
				return "", -1, false
			}
			return text, -1, true // negative or decimal: no value this package reads
		}
		d, _ := parseSeconds(text)
		return text, int64(d / time.Second), true
	case c == ':': // a byte sequence
		p.pos++
		for !p.done() && p.s[p.pos] != ':' {
			if c := p.s[p.pos]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
				return "", -1, false
			}
			p.pos++
		}
		if !p.eat(':') {
			return "", -1, false
		}
		return "", -1, true
	case c == '?': // a boolean
		p.pos++
		if p.eat('0') || p.eat('1') {
			return "", -1, true
		}
		return "", -1, false
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '*':
		start := p.pos
		for !p.done() && tokenChar(p.s[p.pos]) {
			p.pos++
		}
		return p.s[start:p.pos], -1, true
	}
	return "", -1, false
}

// tokenChar reports whether c may appear in a structured field token.
func tokenChar(c byte) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0
}
