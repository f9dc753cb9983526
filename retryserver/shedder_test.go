package retryserver_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retryserver"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// result is what one Admit call returned.
type result struct {
	t   retryserver.Ticket
	err error
}

// admit calls Admit on a goroutine of its own and returns the channel on
// which its result arrives.
func admit(ctx context.Context, s *retryserver.Shedder, isRetry bool) chan result {
	ch := make(chan result, 1)
	go func() {
		t, err := s.Admit(ctx, isRetry)
		ch <- result{t, err}
	}()
	return ch
}

// mustTicket waits for ch's result and fails unless it is a Ticket.
func mustTicket(t *testing.T, ch chan result) retryserver.Ticket {
	t.Helper()
	r := <-ch
	if r.err != nil {
		t.Fatalf("Admit: %v, want a Ticket", r.err)
	}
	return r.t
}

// mustRefusal waits for ch's result and fails unless it is a *Refusal.
func mustRefusal(t *testing.T, ch chan result) *retryserver.Refusal {
	t.Helper()
	r := <-ch
	var rf *retryserver.Refusal
	if !errors.As(r.err, &rf) || !errors.Is(r.err, retryserver.ErrOverloaded) {
		t.Fatalf("Admit: %v, want a *Refusal", r.err)
	}
	return rf
}

// immediate fails unless ch holds a result already (after synctest.Wait)
// and returns it in a fresh channel.
func immediate(t *testing.T, ch chan result) chan result {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-ch:
		ch <- r
		return ch
	default:
		t.Fatal("Admit is waiting, want an answer at once")
		return nil
	}
}

// pending fails if ch already holds a result.
func pending(t *testing.T, ch chan result, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: Admit returned (%v, %v), want it waiting", what, r.t, r.err)
	default:
	}
}

func TestAdmitUpToConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retryserver.New(retryserver.Concurrency(2))
		ctx := context.Background()
		a := mustTicket(t, admit(ctx, s, false))
		b := mustTicket(t, admit(ctx, s, true)) // a retry with a free slot and no queue is served
		c := admit(ctx, s, false)
		synctest.Wait()
		pending(t, c, "third request")
		if st := s.Stats(); st.InFlight != 2 || st.Queued != 1 || st.Admitted != 2 {
			t.Fatalf("Stats = %+v, want 2 in flight, 1 queued, 2 admitted", st)
		}
		a.Success()
		ct := mustTicket(t, c)
		b.Success()
		ct.Drop()
		retryserver.Ticket{}.Success() // the zero Ticket releases nothing
		if st := s.Stats(); st.InFlight != 0 || st.Queued != 0 || st.Admitted != 3 {
			t.Fatalf("Stats = %+v, want 0 in flight, 0 queued, 3 admitted", st)
		}
	})
}

func TestQueueFIFOThenLIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retryserver.New(retryserver.Concurrency(1), retryserver.Interval(100*time.Millisecond), retryserver.Target(5*time.Millisecond))
		ctx := context.Background()
		hold := mustTicket(t, admit(ctx, s, false))

		// Not standing: oldest first.
		a := admit(ctx, s, false)
		synctest.Wait()
		b := admit(ctx, s, false)
		synctest.Wait()
		hold.Success()
		ta := mustTicket(t, a)
		pending(t, b, "b")
		ta.Success()
		tb := mustTicket(t, b)

		// The queue fills at 0 and stays non-empty: a leaves by timeout at
		// 100ms, but b is still there, so from then on it is standing.
		a = admit(ctx, s, false)
		synctest.Wait()
		time.Sleep(90 * time.Millisecond)
		b = admit(ctx, s, false)
		synctest.Wait()
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		mustRefusal(t, a) // waited Interval
		time.Sleep(time.Millisecond)
		c := admit(ctx, s, false)
		synctest.Wait()
		time.Sleep(time.Millisecond)
		d := admit(ctx, s, false)
		synctest.Wait()
		tb.Success() // standing: newest first
		td := mustTicket(t, d)
		pending(t, c, "c")
		pending(t, b, "b")
		td.Success()
		tc := mustTicket(t, c)
		time.Sleep(5 * time.Millisecond) // b waits at most Interval from 90ms: still there
		tc.Success()
		mustTicket(t, b).Success()
	})
}

func TestStandingQueueWaitsTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retryserver.New(retryserver.Concurrency(1), retryserver.Interval(100*time.Millisecond), retryserver.Target(5*time.Millisecond))
		ctx := context.Background()
		hold := mustTicket(t, admit(ctx, s, false))
		defer hold.Success()
		a := admit(ctx, s, false)
		time.Sleep(60 * time.Millisecond)
		b := admit(ctx, s, false)
		time.Sleep(40 * time.Millisecond)
		mustRefusal(t, a)
		start := time.Now()
		c := admit(ctx, s, false) // standing since 100ms: waits Target
		mustRefusal(t, c)
		if w := time.Since(start); w != 5*time.Millisecond {
			t.Errorf("a request in a standing queue waited %v, want Target, 5ms", w)
		}
		mustRefusal(t, b)
	})
}

func TestRetriesShedFirst(t *testing.T) {
	ctx := context.Background()
	run := func(name string, f func(t *testing.T)) {
		t.Run(name, func(t *testing.T) { synctest.Test(t, f) })
	}
	{
		run("first attempts are served before retries", func(t *testing.T) {
			s := retryserver.New(retryserver.Concurrency(1))
			hold := mustTicket(t, admit(ctx, s, false))
			r := admit(ctx, s, true)
			synctest.Wait()
			f := admit(ctx, s, false)
			synctest.Wait()
			hold.Success()
			tf := mustTicket(t, f)
			pending(t, r, "retry")
			tf.Success()
			mustTicket(t, r).Success()
		})
		run("a retry is refused at once while the queue stands", func(t *testing.T) {
			s := retryserver.New(retryserver.Concurrency(1), retryserver.Interval(100*time.Millisecond))
			hold := mustTicket(t, admit(ctx, s, false))
			a := admit(ctx, s, false)
			time.Sleep(50 * time.Millisecond)
			b := admit(ctx, s, false)
			time.Sleep(50 * time.Millisecond)
			mustRefusal(t, a)
			mustRefusal(t, immediate(t, admit(ctx, s, true)))
			f := admit(ctx, s, false) // a first attempt still queues
			synctest.Wait()
			pending(t, f, "first attempt")
			hold.Success()
			mustTicket(t, f).Success() // newest first
			mustTicket(t, b).Success()
		})
		run("a full queue: a first attempt evicts the oldest retry", func(t *testing.T) {
			s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(2))
			hold := mustTicket(t, admit(ctx, s, false))
			r1 := admit(ctx, s, true)
			synctest.Wait()
			r2 := admit(ctx, s, true)
			synctest.Wait()
			mustRefusal(t, immediate(t, admit(ctx, s, true))) // full, and a retry: refused
			f1 := admit(ctx, s, false)
			synctest.Wait()
			mustRefusal(t, immediate(t, r1))
			pending(t, r2, "r2")
			f2 := admit(ctx, s, false)
			synctest.Wait()
			mustRefusal(t, immediate(t, r2))
			mustRefusal(t, immediate(t, admit(ctx, s, false))) // full of first attempts: refused
			hold.Success()
			mustTicket(t, f1).Success()
			mustTicket(t, f2).Success()
			if st := s.Stats(); st.Refused != 4 || st.Admitted != 3 {
				t.Errorf("Stats = %+v, want 4 refused, 3 admitted", st)
			}
		})
		run("no queue", func(t *testing.T) {
			s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0))
			hold := mustTicket(t, admit(ctx, s, false))
			mustRefusal(t, admit(ctx, s, false))
			hold.Success()
		})
	}
}

func TestGoneIsNotStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retryserver.New(retryserver.Concurrency(1))
		cause := errors.New("client went away")
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		if _, err := s.Admit(ctx, false); err != cause {
			t.Errorf("Admit with an ended context: %v, want its cause", err)
		}
		past, cancel2 := context.WithDeadline(context.Background(), time.Now())
		defer cancel2()
		if _, err := s.Admit(past, false); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Admit past the deadline: %v, want DeadlineExceeded", err)
		}

		hold := mustTicket(t, admit(context.Background(), s, false))
		qctx, qcancel := context.WithCancelCause(context.Background())
		q := admit(qctx, s, false)
		synctest.Wait()
		qcancel(cause)
		if r := <-q; r.err != cause {
			t.Errorf("Admit cancelled while queued: %v, want the cause", r.err)
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer dcancel()
		start := time.Now()
		if r := <-admit(dctx, s, false); !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("Admit whose deadline passed while queued: %v, want DeadlineExceeded", r.err)
		}
		if w := time.Since(start); w != 30*time.Millisecond {
			t.Errorf("waited %v, want the 30ms to the deadline", w)
		}
		hold.Success()
		if st := s.Stats(); st.Gone != 4 || st.Refused != 0 || st.InFlight != 0 || st.Queued != 0 {
			t.Errorf("Stats = %+v, want 4 gone, none refused, nothing left", st)
		}
	})
}

func TestPushbackIsDrainTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retryserver.New(retryserver.Concurrency(2), retryserver.QueueLimit(3))
		ctx := context.Background()
		jitter := 0.0
		retryserver.SetJitter(s, func() float64 { return jitter })
		// Teach it a service time of 10ms.
		a, b := mustTicket(t, admit(ctx, s, false)), mustTicket(t, admit(ctx, s, false))
		time.Sleep(10 * time.Millisecond)
		a.Success()
		b.Success()
		a, b = mustTicket(t, admit(ctx, s, false)), mustTicket(t, admit(ctx, s, false))
		var q []chan result
		for range 3 {
			q = append(q, admit(ctx, s, false))
			synctest.Wait()
		}
		// 3 queued plus the refused one, 2 at a time, 10ms each: 20ms.
		if rf := mustRefusal(t, admit(ctx, s, false)); rf.Pushback != 20*time.Millisecond {
			t.Errorf("Pushback = %v, want 20ms", rf.Pushback)
		}
		jitter = 0.5
		if rf := mustRefusal(t, admit(ctx, s, false)); rf.Pushback != 30*time.Millisecond {
			t.Errorf("Pushback with jitter 0.5 = %v, want 30ms", rf.Pushback)
		}
		a.Success()
		b.Success()
		for _, c := range q {
			mustTicket(t, c).Drop()
		}
	})
}

func TestHardSheddingSaysDoNotRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0), retryserver.Interval(100*time.Millisecond))
		ctx := context.Background()
		hold := mustTicket(t, admit(ctx, s, false))
		// One admitted and one refused in the first window: half refused.
		if rf := mustRefusal(t, admit(ctx, s, false)); rf.Pushback <= 0 {
			t.Fatalf("first refusal's Pushback = %v, want positive", rf.Pushback)
		}
		time.Sleep(100 * time.Millisecond)
		rf := mustRefusal(t, admit(ctx, s, false))
		if rf.Pushback >= 0 {
			t.Errorf("Pushback after a window that refused half = %v, want negative", rf.Pushback)
		}
		hold.Success()
		// A window that refused less than half clears it.
		for range 3 {
			mustTicket(t, admit(ctx, s, false)).Success()
		}
		time.Sleep(100 * time.Millisecond)
		hold = mustTicket(t, admit(ctx, s, false))
		if rf := mustRefusal(t, admit(ctx, s, false)); rf.Pushback <= 0 {
			t.Errorf("Pushback after a window that refused a quarter = %v, want positive", rf.Pushback)
		}
		hold.Success()
	})
}

func TestOptionsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"Concurrency(0)":  func() { retryserver.Concurrency(0) },
		"Target(0)":       func() { retryserver.Target(0) },
		"Interval(-1)":    func() { retryserver.Interval(-1) },
		"QueueLimit(-1)":  func() { retryserver.QueueLimit(-1) },
		"Target>Interval": func() { retryserver.New(retryserver.Target(time.Second), retryserver.Interval(time.Millisecond)) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r, _ := recover().(string); len(r) < 12 || r[:12] != "retryserver:" {
					t.Errorf("panic %q, want a retryserver: message", r)
				}
			}()
			f()
		})
	}
}

func TestServedPathAllocatesNothing(t *testing.T) {
	s := retryserver.New()
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		t, err := s.Admit(ctx, false)
		if err != nil {
			panic(err)
		}
		t.Success()
	})
	if allocs != 0 {
		t.Errorf("Admit and Success allocate %v times, want 0", allocs)
	}
}

func TestLimiterDecides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := retry.NewLimiter(retry.LimiterMin(1), retry.LimiterMax(1), retry.LimiterInitial(1))
		s := retryserver.New(retryserver.WithLimiter(l))
		ctx := context.Background()
		a := mustTicket(t, admit(ctx, s, false))
		if l.InFlight() != 1 {
			t.Fatalf("Limiter.InFlight = %d, want 1: the Ticket holds a permit", l.InFlight())
		}
		b := admit(ctx, s, false)
		synctest.Wait()
		pending(t, b, "b, with the Limiter's one permit out")
		a.Failure()
		tb := mustTicket(t, b) // the freed permit goes to the queue
		if l.InFlight() != 1 {
			t.Fatalf("Limiter.InFlight = %d, want 1", l.InFlight())
		}
		tb.Drop()
		if l.InFlight() != 0 {
			t.Errorf("Limiter.InFlight = %d after every Ticket was released, want 0", l.InFlight())
		}
	})
	t.Run("by default, a Limiter of its own", func(t *testing.T) {
		s := retryserver.New(retryserver.QueueLimit(0))
		var held []retryserver.Ticket
		for range 20 { // retry.NewLimiter's initial limit
			tk, err := s.Admit(context.Background(), false)
			if err != nil {
				t.Fatalf("request %d: %v", len(held)+1, err)
			}
			held = append(held, tk)
		}
		if _, err := s.Admit(context.Background(), false); !errors.Is(err, retryserver.ErrOverloaded) {
			t.Errorf("request 21: %v, want a refusal: retry.NewLimiter starts at 20", err)
		}
		for _, tk := range held {
			tk.Success()
		}
	})
}
