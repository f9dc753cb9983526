package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var (
	waiterCount = flag.Int("waiters", 10_000, "calls parked at once by BenchmarkWaiterMemory and BenchmarkGoroutinesLeft")
	cancelCount = flag.Int("cancels", 1_000, "cancels timed by BenchmarkCancelLatency")
)

// settle is how long park lets the last callers move from their failed
// attempt into the wait once every attempt has been made.
const settle = 20 * time.Millisecond

// park parks n calls of call, the i-th under ctx(i): see parking.start.
func park(n int, call caller, ctx func(i int) context.Context) *parking {
	p := newParking(n)
	p.start(call, ctx)
	return p
}

// parking is a set of parked calls.
type parking struct {
	wg         sync.WaitGroup // done when every call has returned
	uncanceled atomic.Int64   // calls that returned an error other than context.Canceled
	ends       []time.Time    // when each call returned, once it sent its index on done
	done       chan int       // the index of each call that returned
}

// newParking returns a parking for n calls, with all its bookkeeping
// allocated, so that memory measured after it counts only the calls.
func newParking(n int) *parking {
	return &parking{ends: make([]time.Time, n), done: make(chan int, n)}
}

// start starts a call of call for each of p's slots, the i-th under ctx(i),
// whose attempts all fail, and returns once every call has made its first
// attempt and had time to start its wait (about an hour, with the parked
// policy).
func (p *parking) start(call caller, ctx func(i int) context.Context) {
	var tried atomic.Int64
	op := func(context.Context) error {
		tried.Add(1)
		return errFail
	}
	n := len(p.ends)
	p.wg.Add(n)
	for i := range n {
		go func() {
			defer p.wg.Done()
			err := call(ctx(i), op)
			p.ends[i] = time.Now()
			if !errors.Is(err, context.Canceled) {
				p.uncanceled.Add(1)
			}
			p.done <- i
		}()
	}
	for tried.Load() < int64(n) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(settle)
}

// wait waits for every call to return and reports, as an error of b's for
// this library and the loop and in b's log for the others, any call that
// returned an error other than context.Canceled.
func (p *parking) wait(b *testing.B, name string) {
	p.wg.Wait()
	if n := p.uncanceled.Load(); n > 0 {
		report(b, name, fmt.Errorf("%d cancelled calls returned an error that is not context.Canceled", n))
	}
}

// report makes err an error of b's for this library and the loop, which
// must meet the targets, and logs it for the others.
func report(b *testing.B, name string, err error) {
	if name == "retry" || name == "loop" {
		b.Error(err)
	} else {
		b.Log(err)
	}
}

// memInUse returns the heap and stack memory in use after a full GC.
func memInUse() (heap, stack int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse), int64(m.StackInuse)
}

// resident returns the process's resident set size in bytes, from
// /proc/self/statm, and false where there is no such file.
func resident() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize()), err == nil
}

// emptyPools empties every sync.Pool: a GC moves what a pool holds to the
// pool's victim cache, and the next GC drops it. The runtime's free
// goroutine descriptors are not in a sync.Pool: they survive any number of
// GCs (only the stacks of those on the runtime's global free list are
// freed, by the first GC, as they would be by memInUse's).
func emptyPools() {
	runtime.GC()
	runtime.GC()
}

// BenchmarkWaiterMemory measures the memory each call holds while it waits
// for its next attempt: *waiterCount calls park on a one-hour wait, and
// B/waiter is the growth of the heap in use (after GC) divided by their
// number. RSS-B/waiter is the growth of the process's resident memory, from
// a baseline taken after returning all free memory to the system: the heap,
// the stacks and whatever the runtime makes resident for a waiting call
// (Linux only). A first parking before the measurement fills the runtime's pool
// of goroutine descriptors, so B/waiter counts what the call holds, not the
// goroutine itself; the sync.Pools that parking filled are emptied before
// each baseline, so B/waiter counts everything the call holds, whether a
// library pools it or not (a pool cannot share an object between calls that
// wait at the same time). stack-B/waiter is the growth of the goroutine
// stacks in use, the part of the goroutine whose size depends on how deep
// the library waits. ns/op is the time to park and cancel them all.
func BenchmarkWaiterMemory(b *testing.B) {
	for _, c := range contenders {
		b.Run("lib="+c.name, func(b *testing.B) {
			call, n := c.build(parked), *waiterCount
			parkAndCancel(b, c.name, n, call)
			b.ReportAllocs()
			var heap, stack, rss int64
			measured := true
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				p := newParking(n)
				emptyPools()
				debug.FreeOSMemory()
				heap0, stack0 := memInUse()
				rss0, ok0 := resident()
				p.start(call, func(int) context.Context { return ctx })
				heap1, stack1 := memInUse()
				rss1, ok1 := resident()
				cancel()
				p.wait(b, c.name)
				heap += heap1 - heap0
				stack += stack1 - stack0
				rss += rss1 - rss0
				measured = measured && ok0 && ok1
			}
			waiters := float64(b.N) * float64(n)
			b.ReportMetric(float64(heap)/waiters, "B/waiter")
			b.ReportMetric(float64(stack)/waiters, "stack-B/waiter")
			if measured {
				b.ReportMetric(float64(rss)/waiters, "RSS-B/waiter")
			}
		})
	}
}

// parkAndCancel parks n calls and cancels them all.
func parkAndCancel(b *testing.B, name string, n int, call caller) {
	ctx, cancel := context.WithCancel(context.Background())
	p := park(n, call, func(int) context.Context { return ctx })
	cancel()
	p.wait(b, name)
}

// BenchmarkCancelLatency measures the time from cancelling a waiting call's
// context to the call's return: *cancelCount calls park, each under its own
// context, and are cancelled one after another, each cancel timed until its
// call has returned. p50-ns and p99-ns are over all the cancels of all the
// iterations. ns/op is the time to park and cancel them all.
func BenchmarkCancelLatency(b *testing.B) {
	for _, c := range contenders {
		b.Run("lib="+c.name, func(b *testing.B) {
			call, n := c.build(parked), *cancelCount
			b.ReportAllocs()
			var lat []time.Duration
			for b.Loop() {
				ctxs := make([]context.Context, n)
				cancels := make([]context.CancelFunc, n)
				for i := range n {
					ctxs[i], cancels[i] = context.WithCancel(context.Background())
				}
				p := park(n, call, func(i int) context.Context { return ctxs[i] })
				for i, cancel := range cancels {
					start := time.Now()
					cancel()
					if j := <-p.done; j != i {
						b.Fatalf("call %d returned while call %d was being cancelled", j, i)
					}
					lat = append(lat, p.ends[i].Sub(start))
				}
				p.wait(b, c.name)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
		})
	}
}

// BenchmarkGoroutinesLeft counts the goroutines still running once
// *waiterCount parked calls have all been cancelled and have returned:
// goroutines-left is the most seen after any iteration, allowing the
// runtime a second to let finished goroutines exit. goleak checks the same
// independently; a leak is an error for this library and the loop, and is
// logged for the others. ns/op is the time to park and cancel them all.
func BenchmarkGoroutinesLeft(b *testing.B) {
	for _, c := range contenders {
		b.Run("lib="+c.name, func(b *testing.B) {
			call, n := c.build(parked), *waiterCount
			b.ReportAllocs()
			left := 0
			for b.Loop() {
				current := goleak.IgnoreCurrent()
				before := runtime.NumGoroutine()
				parkAndCancel(b, c.name, n, call)
				left = max(left, goroutinesAbove(before, time.Second))
				if err := goleak.Find(current); err != nil {
					report(b, c.name, err)
				}
			}
			b.ReportMetric(float64(left), "goroutines-left")
		})
	}
}

// goroutinesAbove returns how many goroutines run beyond n, waiting up to
// patience for the count to fall back to n.
func goroutinesAbove(n int, patience time.Duration) int {
	deadline := time.Now().Add(patience)
	for {
		extra := runtime.NumGoroutine() - n
		if extra <= 0 || time.Now().After(deadline) {
			return max(extra, 0)
		}
		time.Sleep(time.Millisecond)
	}
}
