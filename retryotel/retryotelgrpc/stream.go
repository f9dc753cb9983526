package retryotelgrpc

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/seed-b8c8f69d/retry"
	"github.com/seed-b8c8f69d/retry/retrygrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// StreamClientInterceptor is UnaryClientInterceptor for
// retrygrpc.StreamClientInterceptor. An attempt ends when its stream
// reports an error or its end (through RecvMsg or Header), or when the
// next attempt starts; the call ends when the stream the caller holds
// reports its end or an error through RecvMsg, or when the caller's
// context ends first. A stream the caller neither reads to its end nor
// cancels is never recorded as ended.
func (in *Interceptors) StreamClientInterceptor(s retry.Schedule, opts ...retrygrpc.Option) grpc.StreamClientInterceptor {
	opts = append(opts[:len(opts):len(opts)], retrygrpc.With(in.tel.Options()...))
	inner := retrygrpc.StreamClientInterceptor(s, opts...)
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
		c := in.newCall(ctx, method, cc, callOpts, false)
		sc := &streamCall{call: c, streamer: streamer}
		start := in.now()
		cs, err := inner(ctx, desc, cc, method, sc.attempt, callOpts...)
		if err != nil {
			sc.endAttempt(err)
			in.finish(ctx, c, start, err)
			return nil, err
		}
		out := &callStream{ClientStream: cs, sc: sc, ctx: ctx, start: start}
		out.stop = context.AfterFunc(ctx, func() { out.end(ctx.Err()) })
		return out, nil
	}
}

// streamCall is a call's state for its attempts' streams, which are made
// one at a time.
type streamCall struct {
	*call
	streamer grpc.Streamer

	amu sync.Mutex
	cur *attemptStream // the attempt that has not ended, if any
}

// attempt opens an attempt's stream, as the streamer of retrygrpc's
// interceptor.
func (sc *streamCall) attempt(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, callOpts ...grpc.CallOption) (grpc.ClientStream, error) {
	sc.endAttempt(errSuperseded)
	start := sc.begin(ctx)
	s, err := sc.streamer(sc.tag(ctx), desc, cc, method, callOpts...)
	a := &attemptStream{ClientStream: s, sc: sc, ctx: ctx, start: start}
	if err != nil {
		a.end(err)
		return nil, err
	}
	sc.amu.Lock()
	sc.cur = a
	sc.amu.Unlock()
	return a, nil
}

// errSuperseded ends an attempt that had not reported its end when the
// next one started: retrygrpc had seen it fail.
var errSuperseded = errors.New("retryotelgrpc: superseded by a retry")

// endAttempt ends the current attempt, if one has not ended, with err.
func (sc *streamCall) endAttempt(err error) {
	sc.amu.Lock()
	a := sc.cur
	sc.amu.Unlock()
	if a != nil {
		a.end(err)
	}
}

// attemptStream is one attempt's stream.
type attemptStream struct {
	grpc.ClientStream
	sc    *streamCall
	ctx   context.Context
	start time.Time
	once  sync.Once
}

func (a *attemptStream) end(err error) {
	a.once.Do(func() {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		a.sc.endAt(a.ctx, a.start, err)
		a.sc.amu.Lock()
		if a.sc.cur == a {
			a.sc.cur = nil
		}
		a.sc.amu.Unlock()
	})
}

func (a *attemptStream) RecvMsg(m any) error {
	err := a.ClientStream.RecvMsg(m)
	if err != nil {
		a.end(err)
	}
	return err
}

func (a *attemptStream) SendMsg(m any) error {
	err := a.ClientStream.SendMsg(m)
	if err != nil && !errors.Is(err, io.EOF) {
		// io.EOF says the stream ended: its status comes from RecvMsg.
		a.end(err)
	}
	return err
}

func (a *attemptStream) Header() (md metadata.MD, err error) {
	md, err = a.ClientStream.Header()
	if err != nil {
		a.end(err)
	}
	return md, err
}

// callStream is the stream the caller holds.
type callStream struct {
	grpc.ClientStream
	sc    *streamCall
	ctx   context.Context
	start time.Time
	stop  func() bool
	once  sync.Once
}

func (s *callStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err != nil {
		s.end(err)
	}
	return err
}

func (s *callStream) end(err error) {
	s.once.Do(func() {
		s.stop()
		if errors.Is(err, io.EOF) {
			err = nil
		}
		s.sc.endAttempt(err)
		s.sc.in.finish(s.ctx, s.sc.call, s.start, err)
	})
}
