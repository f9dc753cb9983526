package retrygrpc

import "google.golang.org/grpc"

// splitFinish returns opts without their grpc.OnFinish options, and the
// functions of those options. gRPC calls an OnFinish function when the
// stream it was given to ends, and an interceptor gives the caller's options
// to every attempt: left in place, the functions would run once per attempt
// instead of once per call, as grpc.OnFinish promises. The interceptors
// call them once, with the call's outcome.
//
// splitFinish returns opts itself, and allocates nothing, when it holds no
// OnFinish option.
func splitFinish(opts []grpc.CallOption) ([]grpc.CallOption, []func(error)) {
	n := 0
	for _, o := range opts {
		if _, ok := o.(grpc.OnFinishCallOption); ok {
			n++
		}
	}
	if n == 0 {
		return opts, nil
	}
	rest := make([]grpc.CallOption, 0, len(opts)-n)
	finish := make([]func(error), 0, n)
	for _, o := range opts {
		if f, ok := o.(grpc.OnFinishCallOption); ok {
			finish = append(finish, f.OnFinish)
		} else {
			rest = append(rest, o)
		}
	}
	return rest, finish
}
