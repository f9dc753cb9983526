package retryotelgrpc

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/stats"
)

// A66's per-attempt size instruments.
const (
	MetricAttemptSentSize = "grpc.client.attempt.sent_total_compressed_message_size" // Histogram, By: grpc.method, grpc.target, grpc.status
	MetricAttemptRcvdSize = "grpc.client.attempt.rcvd_total_compressed_message_size" // Histogram, By: grpc.method, grpc.target, grpc.status
)

// sizeBuckets are A66's size buckets, in bytes.
var sizeBuckets = []float64{0, 1024, 2048, 4096, 16384, 65536, 262144, 1048576, 4194304,
	16777216, 67108864, 268435456, 1073741824, 4294967296}

// callKey is the context key of the call an attempt belongs to, which the
// interceptors set for StatsHandler.
type callKey struct{}

// sizesKey is the context key of an attempt's sizes, set by TagRPC.
type sizesKey struct{}

// sizes are the bytes one attempt sent and received.
type sizes struct {
	c          *call
	sent, rcvd atomic.Int64
}

// StatsHandler returns a stats.Handler that records A66's per-attempt
// message sizes, grpc.client.attempt.sent_total_compressed_message_size and
// .rcvd_total_compressed_message_size (Histograms, By, with grpc.method,
// grpc.target and grpc.status): compressed, unencrypted message bytes per
// attempt, without metadata or framing. An interceptor cannot see them.
// Install it with grpc.WithStatsHandler on the connection whose
// interceptors in makes; it records the attempts of those interceptors
// only, and ignores every other RPC. Once it is made, each attempt costs
// its interceptor a context value.
func (in *Interceptors) StatsHandler() stats.Handler {
	in.sized.Store(true)
	return sizeHandler{in}
}

type sizeHandler struct{ in *Interceptors }

func (h sizeHandler) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	c, ok := ctx.Value(callKey{}).(*call)
	if !ok || c.in != h.in {
		return ctx
	}
	return context.WithValue(ctx, sizesKey{}, &sizes{c: c})
}

func (h sizeHandler) HandleRPC(ctx context.Context, rs stats.RPCStats) {
	sz, ok := ctx.Value(sizesKey{}).(*sizes)
	if !ok {
		return
	}
	switch s := rs.(type) {
	case *stats.OutPayload:
		sz.sent.Add(int64(s.CompressedLength))
	case *stats.InPayload:
		sz.rcvd.Add(int64(s.CompressedLength))
	case *stats.End:
		set := sz.c.withStatus(s.Error)
		h.in.sentSize.Record(ctx, sz.sent.Load(), set)
		h.in.rcvdSize.Record(ctx, sz.rcvd.Load(), set)
	}
}

func (sizeHandler) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (sizeHandler) HandleConn(context.Context, stats.ConnStats) {}

// tag returns ctx, marked with c for StatsHandler if one was made.
func (c *call) tag(ctx context.Context) context.Context {
	if !c.in.sized.Load() {
		return ctx
	}
	return context.WithValue(ctx, callKey{}, c)
}
