//go:build gc && linux && amd64 && !race && !purego

package retry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestParkedStack fails if a call waiting for its next attempt would need
// more than the 2 KiB a goroutine starts with, as every waiting call did
// before the flat loop (issue 10).
//
// How it measures: a child process (this test binary, run again) parks one
// call per case, each in a goroutine shaped like the comparison benchmarks'
// (a goroutine's function calling a closure that calls Do or Retry), then
// sends itself SIGQUIT with GOTRACEBACK=system: the runtime prints every
// goroutine's frames with their fp and sp and exits. The frame sizes are the
// compiler's, so the result is the same on every run. For each case the test
// sums the frames from the goroutine's start down to runtime.selectgo,
// inclusive. A new goroutine's frames start 32 bytes below the top of its
// 2048 (newproc1 keeps them spare), and the stack grows when a function is
// entered within StackGuard (928 bytes on linux/amd64) of its end; what
// selectgo calls before the goroutine parks, when the sudog caches are
// empty, goes another 200 bytes deeper (acquireSudog and lock2: 104 + 96
// bytes with go1.26), so the sum must stay at or below 2048 − 32 − 928 − 200
// = 888 bytes. (When a sudog must be allocated, selectgo goes deeper still,
// into mallocgc; the hand-written loop of bench/ has about 100 bytes more
// room for that than Do, and both grow when the allocator takes its slow
// path: bench/README.md has the measured rates.)
// The measurement needs the gc toolchain on linux/amd64, without the race
// detector (which changes frame sizes) and with fusion (the purego build has
// no flat loop).
func TestParkedStack(t *testing.T) {
	if os.Getenv(parkedStackChild) != "" {
		parkAndQuit()
		return
	}
	const limit = 2048 - 32 - 928 - 200
	cmd := exec.Command(os.Args[0], "-test.run=^TestParkedStack$")
	cmd.Env = append(os.Environ(), parkedStackChild+"=1", "GOTRACEBACK=system")
	out, _ := cmd.CombinedOutput() // the child dies of its SIGQUIT
	ids := map[string]string{}     // goroutine id → case
	for _, m := range regexp.MustCompile(`(?m)^parked (.+) in goroutine (\d+)$`).FindAllStringSubmatch(string(out), -1) {
		ids[m[2]] = m[1]
	}
	if len(ids) != len(parkedCases()) {
		t.Fatalf("the child reported %d parked calls, want %d; its output:\n%s", len(ids), len(parkedCases()), out)
	}
	frame := regexp.MustCompile(`fp=(0x[0-9a-f]+) sp=(0x[0-9a-f]+)`)
	seen := 0
	for _, g := range strings.Split(string(out), "\n\n") {
		m := regexp.MustCompile(`^goroutine (\d+) `).FindStringSubmatch(g)
		if m == nil || ids[m[1]] == "" {
			continue
		}
		name := ids[m[1]]
		seen++
		// The frames from the innermost: find selectgo's sp and the
		// outermost fp (goexit's).
		var selectSP, topFP uint64
		var sizes []string
		lines := strings.Split(g, "\n")
		for i, line := range lines {
			f := frame.FindStringSubmatch(line)
			if f == nil {
				continue
			}
			fp, _ := strconv.ParseUint(f[1], 0, 64)
			sp, _ := strconv.ParseUint(f[2], 0, 64)
			fn, _, _ := strings.Cut(lines[i-1], "(")
			if fn == "runtime.selectgo" {
				selectSP = sp
			}
			if selectSP != 0 {
				sizes = append(sizes, fmt.Sprintf("%s %d", fn, fp-sp))
			}
			topFP = fp
		}
		if selectSP == 0 {
			t.Errorf("%s: no runtime.selectgo frame in its traceback:\n%s", name, g)
			continue
		}
		depth := int(topFP - selectSP)
		t.Logf("%s: %d bytes of frames down to selectgo (limit %d): %s", name, depth, limit, strings.Join(sizes, ", "))
		if depth > limit {
			t.Errorf("%s parks %d bytes deep, over the %d that keep it in 2 KiB:\n%s", name, depth, limit, g)
		}
	}
	if seen != len(ids) {
		t.Errorf("found %d of the %d parked goroutines in the traceback:\n%s", seen, len(ids), out)
	}
}

// parkedStackChild is set in the environment of TestParkedStack's child.
const parkedStackChild = "RETRY_PARKED_STACK_CHILD"

// parkedCases are the calls TestParkedStack parks: Do and Retry, with and
// without options, on the comparison benchmarks' policy with one-hour waits.
func parkedCases() map[string]func(ctx context.Context, op func(context.Context) error) error {
	s := Exponential(time.Hour).Cap(2 * time.Hour).FullJitter(nil).Take(4)
	opts := []Option{
		If(func(error) bool { return true }), OnRetry(func(Attempt) {}), WithBudget(NewBudget(0.1, 100)),
		MaxPushback(time.Minute), AttemptTimeout(time.Hour), WithLatency(NewLatency()),
	}
	return map[string]func(ctx context.Context, op func(context.Context) error) error{
		"Do": func(ctx context.Context, op func(context.Context) error) error {
			return Do(ctx, s, op)
		},
		"Do with options": func(ctx context.Context, op func(context.Context) error) error {
			return Do(ctx, s, op, opts...)
		},
		"Retry": func(ctx context.Context, op func(context.Context) error) error {
			_, err := Retry(ctx, s, func(ctx context.Context) (int, error) { return 1, op(ctx) })
			return err
		},
		"Retry with options": func(ctx context.Context, op func(context.Context) error) error {
			_, err := Retry(ctx, s, func(ctx context.Context) (int, error) { return 1, op(ctx) }, opts...)
			return err
		},
	}
}

// parkAndQuit is TestParkedStack's child: it parks every case, reports each
// one's goroutine, and quits with a traceback once all of them wait.
func parkAndQuit() {
	// The goroutines are shaped like bench/waiters_test.go's parking.start.
	var wg sync.WaitGroup
	names := slices.Sorted(maps.Keys(parkedCases()))
	ends := make([]time.Time, len(names))
	done := make(chan int, len(names))
	op := func(context.Context) error { return errBoom }
	for i, name := range names {
		call := parkedCases()[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			report(name)
			err := call(context.Background(), op)
			ends[i] = time.Now()
			if !errors.Is(err, context.Canceled) {
				done <- -1
			}
			done <- i
		}()
	}
	// Wait until every case's goroutine is parked in its select.
	for {
		buf := make([]byte, 1<<20)
		if strings.Count(string(buf[:runtime.Stack(buf, true)]), "[select]:") >= len(parkedCases()) {
			break
		}
		runtime.Gosched()
	}
	os.Stdout.Sync()
	syscall.Kill(os.Getpid(), syscall.SIGQUIT)
	wg.Wait() // never returns: the runtime exits on SIGQUIT
}

// report prints the id of the calling goroutine, from its traceback, as
// that of the case name.
//
//go:noinline
func report(name string) {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	fmt.Printf("parked %s in goroutine %s\n", name, strings.Fields(string(buf))[1])
}
