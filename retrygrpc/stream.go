package retrygrpc

import (
	"context"
	"io"
	"strconv"
	"sync"

	"github.com/seed-b8c8f69d/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// StreamClientInterceptor returns a grpc.StreamClientInterceptor that
// retries streaming calls on schedule s, through retry.Do, until they are
// committed. It retries what UnaryClientInterceptor retries, with the same
// options, pushback, PreviousAttemptsKey header and errors; what differs is
// when a stream may be retried at all.
//
// # The commit rule
//
// As gRFC A6 says, a call may be retried only until it is committed, that is
// until the server's response headers or first response message arrive (a
// server that fails at once sends neither: its status comes alone,
// "trailers-only"), or the client messages kept for replay would exceed
// ReplayLimit, or the caller asks for the stream's Context. Once committed,
// every method goes to the committed attempt's stream, and its errors reach
// the caller unchanged. Before that, a failure that may be retried is retried
// inside whichever method observed it (NewStream, SendMsg, CloseSend, RecvMsg
// or Header): a new stream is opened, the messages sent so far are sent again
// in order, CloseSend is repeated if it was called, and the method carries on
// as if nothing had happened. The messages are kept by reference (gRPC's rule
// that a message must not be modified after SendMsg makes that safe) and
// released at the commit.
//
// # When the retries end
//
// When the retries end without a committed attempt, RecvMsg returns the
// error UnaryClientInterceptor would have returned, SendMsg returns io.EOF
// (as gRPC does for a stream that ended), and Header returns no metadata.
// NewStream itself returns an error only if no attempt could open a stream.
//
// retry.AttemptTimeout bounds each attempt until it commits; a committed
// stream lives under the caller's context alone.
//
// # Hooks and concurrency
//
// OnRetry hooks (and If, OnDone, and the OnFinish functions of a call whose
// retries ended) run on a goroutine of the interceptor, one per uncommitted
// call, which exits at the commit or when the retries end. A panic there does
// not end the program: the call ends, its latest attempt is cancelled, and
// the caller's method that observes the end (NewStream, SendMsg, CloseSend,
// RecvMsg or Header, and every later one) panics with the same value; a
// RecvMsg that reads the end of a committed stream waits for that goroutine
// to exit first, so such a panic is never lost.
//
// The stream the interceptor returns follows grpc.ClientStream's rules:
// SendMsg and RecvMsg may run concurrently with each other, each from one
// goroutine at a time. As with any gRPC stream, cancel the context or read
// until an error to release it. StreamClientInterceptor panics if s is nil.
func StreamClientInterceptor(s retry.Schedule, opts ...Option) grpc.StreamClientInterceptor {
	if s == nil {
		panic("retrygrpc: StreamClientInterceptor: nil Schedule")
	}
	cfg := newConfig(opts)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		if !cfg.selected(method) {
			return streamer(ctx, desc, cc, method, callOpts...)
		}
		st := &stream{
			ctx: ctx, cfg: cfg, desc: desc, cc: cc, method: method, streamer: streamer,
			recvLock: make(chan struct{}, 1),
			changed:  make(chan struct{}),
			driven:   make(chan struct{}),
		}
		st.callOpts, st.finish = splitFinish(callOpts)
		if cfg.limit > 0 {
			st.codec = codecOf(callOpts)
		}
		go st.drive(s)
		st.mu.Lock()
		defer st.mu.Unlock()
		for st.cur == nil && !st.done {
			st.waitLocked()
		}
		if st.cur == nil {
			st.repanic() // deferred unlock releases st.mu
			return nil, st.final
		}
		return st, nil
	}
}

// stream is a grpc.ClientStream that retries until it is committed. Its
// attempts are made by a goroutine running retry.Do (drive); the caller's
// methods observe each attempt's outcome and settle it, or wait for the
// next attempt.
type stream struct {
	ctx      context.Context // the caller's
	cfg      *config
	desc     *grpc.StreamDesc
	cc       *grpc.ClientConn
	method   string
	streamer grpc.Streamer
	callOpts []grpc.CallOption // the caller's but OnFinish
	finish   []func(error)     // the caller's OnFinish functions, run once, for the call
	codec    encoding.CodecV2  // measures kept messages; nil: they cannot be measured

	driven chan struct{} // closed when drive has returned

	// recvLock is a token held by whoever calls RecvMsg on an attempt that
	// is not committed: the caller's RecvMsg, or drive finding out the
	// status of an attempt that ended without headers.
	recvLock chan struct{}

	mu        sync.Mutex
	changed   chan struct{} // closed and replaced when anything below changes
	cur       *attempt      // the latest attempt; nil before the first
	committed bool          // cur is committed
	done      bool          // the retries ended without a committed attempt
	final     error         // when done: what RecvMsg returns
	n         int           // attempts started
	kept      []any         // messages sent while not committed
	size      int           // their encoded size
	closed    bool          // CloseSend was called
	finishDue bool          // the committed attempt ended: unlock runs finish
	finishErr error         // with this, the attempt's outcome
	finishRan bool          // finish has run, or is running
	panicked  any           // when done: what a hook or OnFinish panicked with, if one did
}

// attempt is one stream opened by the streamer.
type attempt struct {
	cs     grpc.ClientStream
	cancel context.CancelFunc // ends cs's context

	// Guarded by stream.mu.
	replaying bool          // drive is sending the kept messages again
	settled   chan struct{} // closed when err is known
	isSettled bool
	err       error // nil: committed; else the failure
	ended     bool  // gRPC ended cs: its OnFinish ran, with endErr
	endErr    error
}

// waitLocked waits, with st.mu released, for the next change.
func (st *stream) waitLocked() {
	ch := st.changed
	st.mu.Unlock()
	<-ch
	st.mu.Lock()
}

func (st *stream) broadcastLocked() {
	close(st.changed)
	st.changed = make(chan struct{})
}

// settle records a's outcome, if it has none yet: committed for a nil err,
// failed otherwise. It reports whether a is committed, by this call or an
// earlier one.
func (st *stream) settle(a *attempt, err error) bool {
	st.mu.Lock()
	defer st.unlock()
	return st.settleLocked(a, err)
}

// unlock releases st.mu; then, if the committed attempt has ended, it runs
// the caller's OnFinish functions, unless they ran already. Use it, rather
// than st.mu.Unlock, after anything that may commit an attempt.
func (st *stream) unlock() {
	run := st.finishDue && !st.finishRan
	if run {
		st.finishRan = true
	}
	err := st.finishErr
	st.mu.Unlock()
	if run {
		st.finished(err)
	}
}

// finished runs the caller's OnFinish functions with the call's outcome.
func (st *stream) finished(err error) {
	for _, f := range st.finish {
		f(err)
	}
}

// attemptEnded is a's OnFinish, given to gRPC when the caller has OnFinish
// functions: it runs them if a is the committed attempt, or leaves that to
// the commit if a is not settled yet. gRPC runs it when a's stream ends,
// once a's Header, Trailer and Peer options are set.
func (st *stream) attemptEnded(a *attempt, err error) {
	st.mu.Lock()
	a.ended, a.endErr = true, err
	if a.isSettled && a.err == nil {
		st.finishDue, st.finishErr = true, err
	}
	st.unlock()
}

func (st *stream) settleLocked(a *attempt, err error) bool {
	if !a.isSettled {
		a.isSettled, a.err = true, err
		close(a.settled)
		if err == nil {
			// Drop the kept messages, but leave their array alone: a
			// replay still running on a reads it.
			st.committed = true
			st.kept = nil
			st.finishDue, st.finishErr = a.ended, a.endErr
		}
		st.broadcastLocked()
	}
	return a.err == nil
}

// drive runs the retries, on a goroutine of its own, until an attempt is
// committed or the retries end.
//
// The user code it runs (the options' hooks and predicates, the caller's
// OnFinish functions) may panic. The panic must not end the program from a
// goroutine the caller does not own: drive recovers it, ends the call,
// cancelling the latest attempt even if it was committed, and the caller's
// methods that observe the end panic with the same value (repanic).
func (st *stream) drive(s retry.Schedule) {
	defer close(st.driven)
	normal := false
	defer func() {
		if normal {
			return
		}
		p := recover()
		st.mu.Lock()
		st.done, st.panicked = true, p
		st.final = status.Error(codes.Internal, "retrygrpc: a hook panicked")
		st.finishRan = true // the panic, not OnFinish, tells the caller the call ended
		if st.cur != nil {
			st.cur.cancel()
		}
		st.broadcastLocked()
		st.mu.Unlock()
	}()
	st.run(s)
	normal = true
}

// repanic panics with what drive recovered, if it recovered a panic. Call it
// without st.mu, once done was seen or drive has returned.
func (st *stream) repanic() {
	if st.panicked != nil {
		panic(st.panicked)
	}
}

// ended returns err, which RecvMsg got from the committed attempt. An error
// ends the stream: RecvMsg then waits for drive, which after the commit only
// finishes retry.Do's hooks, so that a panic in them reaches the caller even
// when the stream ended first.
func (st *stream) ended(err error) error {
	if err != nil {
		<-st.driven
		st.repanic()
	}
	return err
}

// run is drive's work: the retries, and what follows if they fail.
func (st *stream) run(s retry.Schedule) {
	err := retry.Do(st.ctx, s, st.try, st.cfg.optsFor(st.cc)...)
	if err == nil {
		return
	}
	err = result(st.ctx, err)
	if len(st.finish) > 0 {
		// No attempt was committed: the call ended with err, which
		// the caller's OnFinish functions get before the caller does.
		st.mu.Lock()
		run := !st.finishRan
		st.finishRan = true
		st.mu.Unlock()
		if run {
			st.finished(err)
		}
	}
	st.mu.Lock()
	st.done, st.final = true, err
	st.broadcastLocked()
	st.mu.Unlock()
}

// try makes one attempt, for retry.Do: it opens a stream, sends the kept
// messages again, and waits until the attempt is committed (nil) or fails.
func (st *stream) try(actx context.Context) error {
	st.mu.Lock()
	st.n++
	n := st.n
	st.mu.Unlock()

	sctx, cancel := context.WithCancel(st.ctx)
	a := &attempt{cancel: cancel, settled: make(chan struct{})}
	// With an attempt timeout, abandon the attempt if it expires before the
	// commit, while the stream is opened as well as after.
	stop := func() bool { return false }
	if actx != st.ctx {
		stop = context.AfterFunc(actx, func() {
			if !st.settle(a, status.FromContextError(actx.Err()).Err()) {
				cancel()
			}
		})
	}
	ctx := sctx
	if n > 1 {
		ctx = metadata.AppendToOutgoingContext(sctx, PreviousAttemptsKey, strconv.Itoa(n-1))
	}
	callOpts := st.callOpts
	if len(st.finish) > 0 {
		callOpts = append(callOpts[:len(callOpts):len(callOpts)], grpc.OnFinish(func(err error) { st.attemptEnded(a, err) }))
	}
	cs, err := st.streamer(ctx, st.desc, st.cc, st.method, callOpts...)
	if err != nil {
		stop()
		cancel()
		return st.cfg.mark(st.ctx, actx, err, nil)
	}
	a.cs = cs

	// Publish a, then replay: RecvMsg may already use a, SendMsg and
	// CloseSend wait until the replay is over. Nothing is added to kept
	// while the previous attempt is failed, so the snapshot is complete.
	st.mu.Lock()
	st.cur = a
	kept, closed := st.kept, st.closed
	a.replaying = len(kept) > 0 || closed
	st.broadcastLocked()
	st.mu.Unlock()
	if a.replaying {
		st.replay(a, kept, closed)
	}

	// Headers mean the commit; a stream that ends without them failed, or
	// ended at once with an OK status, which the status tells.
	if md, _ := cs.Header(); md != nil {
		st.settle(a, nil)
	} else {
		st.resolve(a)
	}
	<-a.settled
	stop()

	if a.err == nil {
		// Committed: the stream lives on under the caller's context, and
		// its own context is released when gRPC ends the stream.
		context.AfterFunc(cs.Context(), cancel)
		return nil
	}
	cancel()
	return st.cfg.mark(st.ctx, actx, a.err, cs.Trailer())
}

// replay sends the kept messages on a, and CloseSend if closed, then lets
// SendMsg and CloseSend use a. It stops at the first error: the attempt
// failed, which try finds out as for any other failure.
func (st *stream) replay(a *attempt, kept []any, closed bool) {
	var err error
	for _, m := range kept {
		if err = a.cs.SendMsg(m); err != nil {
			break
		}
	}
	if err == nil && closed {
		err = a.cs.CloseSend()
	}
	if err != nil && err != io.EOF {
		// Not the end of the stream but a local failure: end the attempt
		// so that its status says what happened.
		a.cancel()
	}
	st.mu.Lock()
	a.replaying = false
	st.broadcastLocked()
	st.mu.Unlock()
}

// resolve settles a, which ended without headers, from its status: it takes
// the status with a RecvMsg, which without headers cannot consume a
// message, unless the caller's RecvMsg is already doing so.
func (st *stream) resolve(a *attempt) {
	select {
	case st.recvLock <- struct{}{}:
	case <-a.settled:
		return
	}
	defer func() { <-st.recvLock }()
	st.mu.Lock()
	settled := a.isSettled
	st.mu.Unlock()
	if settled {
		return
	}
	err := a.cs.RecvMsg(new(noMessage))
	if err == io.EOF {
		err = nil // the call ended at once with an OK status
	}
	st.settle(a, err)
}

// noMessage is what resolve receives into; it is never filled.
type noMessage struct{}

// currentLocked returns the attempt that the caller's methods use: the
// committed one, or the latest if it has not failed. It waits while the
// latest attempt has failed and the next is not there yet, and with sending
// also while the kept messages are being sent again on it. It returns nil
// when the retries ended without a commit.
func (st *stream) currentLocked(sending bool) *attempt {
	for {
		if st.done {
			return nil
		}
		a := st.cur
		if (st.committed || !a.isSettled) && !(sending && a.replaying) {
			return a
		}
		st.waitLocked()
	}
}

// SendMsg sends m on the current attempt and, while the call is not
// committed, keeps it for replay. If the attempt failed and is retried, m
// is sent again on the next one and SendMsg returns nil.
func (st *stream) SendMsg(m any) error {
	st.mu.Lock()
	a := st.currentLocked(true)
	if a == nil {
		st.mu.Unlock()
		st.repanic()
		return io.EOF
	}
	if st.committed {
		st.mu.Unlock()
		return a.cs.SendMsg(m)
	}
	st.keepLocked(a, m)
	st.unlock()

	err := a.cs.SendMsg(m)
	if err == nil {
		return nil
	}
	if err != io.EOF {
		// A local failure, such as a message that cannot be encoded:
		// another attempt would fail the same way.
		st.settle(a, nil)
		return err
	}
	// The attempt ended. m is kept, so if it failed and is retried, the
	// next attempt sends m again.
	st.mu.Lock()
	defer st.mu.Unlock()
	for !a.isSettled {
		st.waitLocked()
	}
	if a.err == nil {
		return io.EOF // committed: RecvMsg has the status
	}
	if st.currentLocked(false) == nil {
		st.repanic()  // deferred unlock releases st.mu
		return io.EOF // given up: RecvMsg has the status
	}
	return nil
}

// keepLocked keeps m for replay, or commits a when m cannot be kept.
func (st *stream) keepLocked(a *attempt, m any) {
	if st.codec == nil {
		st.settleLocked(a, nil)
		return
	}
	b, err := st.codec.Marshal(m)
	if err != nil {
		st.settleLocked(a, nil) // SendMsg reports the error
		return
	}
	size := b.Len()
	b.Free()
	if size > st.cfg.limit-st.size {
		st.settleLocked(a, nil)
		return
	}
	st.size += size
	st.kept = append(st.kept, m)
}

// CloseSend closes the sending side of the current attempt, and of every
// later attempt while the call is not committed.
func (st *stream) CloseSend() error {
	st.mu.Lock()
	a := st.currentLocked(true)
	if a == nil {
		st.mu.Unlock()
		st.repanic()
		return nil
	}
	if !st.committed {
		st.closed = true
	}
	st.mu.Unlock()
	return a.cs.CloseSend()
}

// RecvMsg receives the next message. Before the commit, a message or the
// end of the stream commits the call, and a failure that is retried is
// followed by a receive on the next attempt.
func (st *stream) RecvMsg(m any) error {
	for {
		st.mu.Lock()
		a := st.currentLocked(false)
		committed, final := st.committed, st.final
		st.mu.Unlock()
		if a == nil {
			st.repanic()
			return final
		}
		if committed {
			return st.ended(a.cs.RecvMsg(m))
		}
		select {
		case st.recvLock <- struct{}{}:
		case <-a.settled:
			continue
		}
		st.mu.Lock()
		settled := a.isSettled
		st.mu.Unlock()
		if settled {
			<-st.recvLock
			continue
		}
		err := a.cs.RecvMsg(m)
		<-st.recvLock
		if err == nil || err == io.EOF {
			if st.settle(a, nil) {
				return st.ended(err)
			}
			continue // the attempt timed out meanwhile; m is received again
		}
		if md, _ := a.cs.Header(); md != nil {
			// Headers came before the failure: committed.
			if st.settle(a, nil) {
				return st.ended(err)
			}
			continue
		}
		if st.settle(a, err) {
			return st.ended(err) // committed by the caller meanwhile
		}
	}
}

// Header returns the response headers. Before the commit, headers commit the
// call; a stream that ends without them is settled, and Header waits for
// the next attempt if it is retried.
func (st *stream) Header() (metadata.MD, error) {
	for {
		st.mu.Lock()
		a := st.currentLocked(false)
		committed := st.committed
		st.mu.Unlock()
		if a == nil {
			st.repanic()
			return nil, nil // ended without headers: RecvMsg has the status
		}
		if committed {
			return a.cs.Header()
		}
		md, err := a.cs.Header()
		if md != nil {
			if st.settle(a, nil) {
				return md, err
			}
			continue
		}
		<-a.settled // drive or RecvMsg finds out the status
	}
}

// Trailer returns the trailer of the latest attempt. As for any gRPC stream,
// call it only after RecvMsg returned an error.
func (st *stream) Trailer() metadata.MD {
	st.mu.Lock()
	a := st.cur
	st.mu.Unlock()
	return a.cs.Trailer()
}

// Context commits the call, as grpc-go's own retries do, and returns the
// committed attempt's context, which carries its peer. If the retries ended
// without a commit it returns the caller's context.
func (st *stream) Context() context.Context {
	st.mu.Lock()
	a := st.currentLocked(false)
	if a == nil {
		st.mu.Unlock()
		return st.ctx
	}
	st.settleLocked(a, nil)
	st.unlock()
	return a.cs.Context()
}
