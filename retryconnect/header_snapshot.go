package retryconnect

import "net/http"

// headerSnapshot remembers a request's headers as the caller made them, so
// that every retry sends them so: interceptors nearer the network and
// Connect itself write to the request's headers while sending it, and
// without a restore their additions would pile up attempt after attempt.
//
// It keeps each key with its slice of values, cut to its length (a full
// slice expression), not a copy of the values: Set, Add and Del, which is
// how Connect and interceptors write headers, replace or grow a key's
// slice and never change the values the caller's slice holds. The first
// four keys are kept inline, so that a snapshot costs no allocation of its
// own for the usual request (a caller's request carries few headers: Connect
// adds its own below the interceptor).
type headerSnapshot struct {
	n      int
	inline [4]headerEntry
	more   []headerEntry // keys beyond the first four
}

type headerEntry struct {
	key    string
	values []string
}

// save remembers h.
func (s *headerSnapshot) save(h http.Header) {
	for k, v := range h {
		e := headerEntry{k, v[:len(v):len(v)]}
		if s.n < len(s.inline) {
			s.inline[s.n] = e
		} else {
			s.more = append(s.more, e)
		}
		s.n++
	}
}

// restore makes h what it was when save was called.
func (s *headerSnapshot) restore(h http.Header) {
	clear(h)
	for _, e := range s.inline[:min(s.n, len(s.inline))] {
		h[e.key] = e.values
	}
	for _, e := range s.more {
		h[e.key] = e.values
	}
}
