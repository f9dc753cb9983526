package retry

import (
	"strings"
	"time"
)

// A Spec is a Schedule together with the text it was parsed from, so that a
// schedule can be a flag or a field of a configuration file without glue:
// *Spec implements flag.Value, encoding.TextUnmarshaler and
// encoding.TextMarshaler around Parse, which flag.TextVar, flag.Var,
// encoding/json (for a JSON string) and YAML libraries that honour these
// interfaces all use.
//
//	backoff := retry.MustSpec("exponential(100ms).cap(2s).fulljitter.take(5)")
//	flag.TextVar(&backoff, "backoff", backoff, "retry `schedule`")
//	flag.Parse()
//	err := retry.Do(ctx, backoff.Schedule(), fn)
//
// # Text
//
// String and MarshalText return the text exactly as it was given, spaces and
// case kept, not a canonical form: a configuration file reads back as it was
// written. The zero Spec is ready to use and is the empty schedule: no
// retries, so a call makes a single attempt. Its String and MarshalText
// return "delays()", the text of that schedule, which reads back as the same.
//
// Text that Parse rejects makes Set and UnmarshalText return Parse's error,
// never panic, and leaves the Spec as it was. The jitter of the Schedule
// draws from math/rand/v2's goroutine-safe generator, as Parse's does; for
// repeatable delays, pass String's text to ParseWithSource with a seeded source.
//
// # Concurrency
//
// A Spec is safe for concurrent reads: Schedule, String and MarshalText may
// be called by any number of goroutines at once, and the Schedule ranged by
// any number of them. Set and UnmarshalText change the Spec, so like any
// assignment they must not run concurrently with other uses of the same Spec.
// Copying a Spec copies the schedule, which is a value.
type Spec struct {
	text     string   // as given; empty in the zero Spec
	schedule Schedule // nil in the zero Spec
}

// zeroSpecText is the text of the zero Spec's empty schedule.
const zeroSpecText = "delays()"

// noDelays is the zero Spec's schedule: no delays, so a single attempt.
func noDelays(func(time.Duration) bool) {}

// MustSpec returns the Spec of text, for a default written in the program,
// such as the value given to flag.TextVar. It panics with Parse's message if
// text is not a valid schedule; text from outside the program goes through
// Set or UnmarshalText, which return the error instead.
func MustSpec(text string) Spec {
	var s Spec
	if err := s.Set(text); err != nil {
		panic("retry: MustSpec: " + strings.TrimPrefix(err.Error(), "retry: "))
	}
	return s
}

// Schedule returns the schedule s describes; for the zero Spec, the empty
// schedule. It never returns nil.
func (s Spec) Schedule() Schedule {
	if s.schedule == nil {
		return noDelays
	}
	return s.schedule
}

// String returns the text s was parsed from, exactly as given, or
// "delays()" for the zero Spec.
func (s Spec) String() string {
	if s.schedule == nil {
		return zeroSpecText
	}
	return s.text
}

// MarshalText returns the text s was parsed from, as String does. It never
// returns an error.
func (s Spec) MarshalText() ([]byte, error) {
	return []byte(s.String()), nil
}

// UnmarshalText parses text with Parse and sets s to the result. On error it
// returns Parse's error and leaves s unchanged. It keeps a copy of text, so
// the caller may reuse the slice.
func (s *Spec) UnmarshalText(text []byte) error {
	return s.Set(string(text))
}

// Set parses text with Parse and sets s to the result, for flag.Var. On
// error it returns Parse's error and leaves s unchanged.
func (s *Spec) Set(text string) error {
	sched, err := Parse(text)
	if err != nil {
		return err
	}
	*s = Spec{text: text, schedule: sched}
	return nil
}
