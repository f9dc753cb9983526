package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryhttp"
)

// The entry points that take a retry.Option, in the root module. Other
// modules' (retrygrpc, retryconnect, retryotel, retrysql) pass their
// options on to Retry, Do or Hedge, whose checks then apply.
var entryPoints = []string{"Retry", "Do", "Hedge", "NewTransport", "NewHedgingTransport", "NewClient"}

// An optionRow is the decision for one Option constructor: the entry points
// that refuse it, with a panic naming the option and the entry point; every
// other entry point applies it, as the package documentation's table says.
type optionRow struct {
	make    func(forHTTP bool) retry.Option // the option; forHTTP: for a call whose value is an *http.Response
	refused []string                        // entry points that panic when given it
}

// optionRows holds a row for every exported constructor of a retry.Option:
// TestEveryOptionHasADecision fails when one is missing, so an option cannot
// be added without deciding what each entry point does with it.
var optionRows = map[string]optionRow{
	"AttemptTimeout": {make: func(bool) retry.Option { return retry.AttemptTimeout(time.Second) }},
	"OnDiscard": {
		make: func(forHTTP bool) retry.Option {
			if forHTTP {
				return retry.OnDiscard(func(*http.Response) {})
			}
			return retry.OnDiscard(func(string) {})
		},
		refused: []string{"Do", "NewTransport", "NewClient"},
	},
	"If": {make: func(bool) retry.Option { return retry.If(retry.IsTransient) }},
	"IfValue": {
		make: func(forHTTP bool) retry.Option {
			if forHTTP {
				return retry.IfValue(func(*http.Response) bool { return false })
			}
			return retry.IfValue(func(string) bool { return false })
		},
		refused: []string{"Do", "Hedge", "NewTransport", "NewHedgingTransport", "NewClient"},
	},
	"MaxElapsed": {make: func(bool) retry.Option { return retry.MaxElapsed(time.Minute) }},
	"MaxPushback": {
		make:    func(bool) retry.Option { return retry.MaxPushback(time.Second) },
		refused: []string{"NewHedgingTransport"},
	},
	"MaxRetriesIf": {make: func(bool) retry.Option { return retry.MaxRetriesIf(1, retry.IsTransient) }},
	"WithLatency":  {make: func(bool) retry.Option { return retry.WithLatency(retry.NewLatency()) }},
	"OnDone":       {make: func(bool) retry.Option { return retry.OnDone(func(retry.Outcome) {}) }},
	"OnHedgeDone": {
		make:    func(bool) retry.Option { return retry.OnHedgeDone(func(retry.Outcome, retry.HedgeResult) {}) },
		refused: []string{"Retry", "Do", "NewTransport", "NewClient"},
	},
	"OnRetry":      {make: func(bool) retry.Option { return retry.OnRetry(func(retry.Attempt) {}) }},
	"WithBreaker":  {make: func(bool) retry.Option { return retry.WithBreaker(retry.NewBreaker()) }},
	"WithBudget":   {make: func(bool) retry.Option { return retry.WithBudget(retry.NewBudget(0.1, 10)) }},
	"WithClock":    {make: func(bool) retry.Option { return retry.WithClock(retry.NewFakeClock(time.Unix(0, 0))) }},
	"WithLimiter":  {make: func(bool) retry.Option { return retry.WithLimiter(retry.NewLimiter()) }},
	"WithLogger":   {make: func(bool) retry.Option { return retry.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))) }},
	"WithThrottle": {make: func(bool) retry.Option { return retry.WithThrottle(retry.NewThrottle()) }},
}

// optionConstructors returns the names of the functions of package retry
// that return an Option, as the API record lists them.
func optionConstructors(t *testing.T) []string {
	b, err := os.ReadFile("api/retry.txt")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^pkg retry, func (\w+)(?:\[[^\]]*\])?\(.*\) Option$`)
	var names []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		names = append(names, m[1])
	}
	if len(names) < 10 {
		t.Fatalf("found only %d Option constructors in api/retry.txt: %v", len(names), names)
	}
	return names
}

func TestEveryOptionHasADecision(t *testing.T) {
	names := optionConstructors(t)
	for _, name := range names {
		if _, ok := optionRows[name]; !ok {
			t.Errorf("retry.%s returns an Option but has no row in optionRows: decide, for each entry point, whether it applies or is refused (and say so in the package documentation's table)", name)
		}
	}
	for name, row := range optionRows {
		if !slices.Contains(names, name) {
			t.Errorf("optionRows has a row for %s, which api/retry.txt does not list as an Option constructor", name)
		}
		for _, e := range row.refused {
			if !slices.Contains(entryPoints, e) {
				t.Errorf("%s: refused by %q, which is no entry point", name, e)
			}
		}
	}
}

// TestOptionsByEntryPoint gives every option to every entry point: an entry
// point that refuses it must panic, at the call or when built, with a
// message naming both; one that applies it must make the call as usual.
func TestOptionsByEntryPoint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	for _, name := range optionConstructors(t) {
		row, ok := optionRows[name]
		if !ok {
			continue // TestEveryOptionHasADecision reports it
		}
		for _, e := range entryPoints {
			refused := slices.Contains(row.refused, e)
			verdict := "applies"
			if refused {
				verdict = "refused"
			}
			t.Run(name+"/"+e+"/"+verdict, func(t *testing.T) {
				forHTTP := strings.HasPrefix(e, "New")
				got := catch(func() { callEntry(t, e, row.make(forHTTP), srv.URL) })
				if !refused {
					if got != nil {
						t.Fatalf("%s panicked with %v; want %s applied", e, got, name)
					}
					return
				}
				msg, _ := got.(string)
				want := "retry: " + e + ": " + name + " "
				if forHTTP {
					want = "retryhttp: " + e + ": retry." + name + " "
				}
				if !strings.HasPrefix(msg, want) {
					t.Fatalf("%s with %s: panic %v; want a message that starts %q", e, name, got, want)
				}
			})
		}
	}
}

// callEntry makes one call of entry point e with opt, which succeeds.
// For the retryhttp entry points, it sends a GET (retried, or raced) and a
// POST (sent once) to url.
func callEntry(t *testing.T, e string, opt retry.Option, url string) {
	ctx, s := t.Context(), retry.Constant(time.Millisecond).Take(2)
	var err error
	switch e {
	case "Retry":
		_, err = retry.Retry(ctx, s, func(context.Context) (string, error) { return "v", nil }, opt)
	case "Do":
		err = retry.Do(ctx, s, func(context.Context) error { return nil }, opt)
	case "Hedge":
		_, err = retry.Hedge(ctx, s, func(context.Context) (string, error) { return "v", nil }, opt)
	default:
		var c *http.Client
		switch e {
		case "NewTransport":
			c = &http.Client{Transport: retryhttp.NewTransport(nil, s, opt)}
		case "NewHedgingTransport":
			c = &http.Client{Transport: retryhttp.NewHedgingTransport(nil, s, opt)}
		case "NewClient":
			c = retryhttp.NewClient(s, opt)
		default:
			t.Fatalf("no entry point %s", e)
		}
		defer c.CloseIdleConnections()
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req, rerr := http.NewRequestWithContext(ctx, method, url, strings.NewReader("body"))
			if rerr != nil {
				t.Fatal(rerr)
			}
			resp, rerr := c.Do(req)
			if rerr != nil {
				err = errors.Join(err, rerr)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = errors.Join(err, fmt.Errorf("%s: status %d", method, resp.StatusCode))
			}
		}
	}
	if err != nil {
		t.Errorf("%s: %v", e, err)
	}
}

// catch returns what f panicked with, or nil.
func catch(f func()) (got any) {
	defer func() { got = recover() }()
	f()
	return nil
}

// TestOptionChecksAllocateNothing: the check of a call's options costs a
// call that succeeds nothing, with the options that take the general path.
func TestOptionChecksAllocateNothing(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	s := retry.Exponential(100 * time.Millisecond).Take(5)
	opts := []retry.Option{retry.IfValue(func(string) bool { return false }), retry.OnDiscard(func(string) {}),
		retry.OnDone(func(retry.Outcome) {}), retry.MaxElapsed(time.Second), retry.MaxRetriesIf(1, retry.IsTransient)}
	succeed := func(context.Context) (string, error) { return "v", nil }
	if n := testing.AllocsPerRun(1000, func() { _, _ = retry.Retry(ctx, s, succeed, opts...) }); n != 0 {
		t.Errorf("Retry with IfValue, OnDiscard, OnDone, MaxElapsed and MaxRetriesIf: %v allocations, want 0", n)
	}
	doOpts := []retry.Option{retry.OnDone(func(retry.Outcome) {}), retry.MaxElapsed(time.Second), retry.MaxRetriesIf(1, retry.IsTransient)}
	if n := testing.AllocsPerRun(1000, func() { _ = retry.Do(ctx, s, func(context.Context) error { return nil }, doOpts...) }); n != 0 {
		t.Errorf("Do with OnDone, MaxElapsed and MaxRetriesIf: %v allocations, want 0", n)
	}
	o := retry.OnHedgeDone(func(retry.Outcome, retry.HedgeResult) {})
	if n := testing.AllocsPerRun(100, func() { _ = o.ReportsHedges() || o.ReleasesValues() || o.BoundsPushback() || o.JudgesValues() }); n != 0 {
		t.Errorf("ReportsHedges, ReleasesValues, BoundsPushback: %v allocations, want 0", n)
	}
}
