// Package retryserver is the server's half of retrying: it decides, for each
// request a server receives, whether to serve it now, queue it briefly, or
// refuse it at once with the wait after which the client should come back.
// It knows nothing of HTTP or gRPC: retryhttp.NewHandler and retrygrpc's
// server interceptors put a Shedder in front of a handler, and any other
// server can call Admit itself.
//
// A Shedder admits at most as many requests at once as a limit allows: by
// default that of an adaptive retry.Limiter of its own, which finds the
// concurrency at which the server's latency starts to grow (WithLimiter to
// give it one, Concurrency to fix the number instead). A request that finds
// every slot taken waits in a short queue managed as
// CoDel manages a router's (Target, Interval): while the queue empties now
// and then, a request may wait up to Interval; once it has stayed non-empty
// for a whole Interval (a standing queue, the mark of overload), a request
// waits at most Target and the queue is served newest first, so that those
// still likely to be waited for are served while the oldest, whose callers
// may have given up, time out (Facebook's adaptive LIFO). Work that cannot be
// useful is not started: a request whose context has ended or whose deadline
// has passed is turned away, and one whose context ends while it waits
// leaves the queue.
//
// Retries are shed first. Admit is told whether the request is a retry (the
// header retrygrpc.PreviousAttemptsKey or retryhttp.PreviousAttemptsHeader
// says so): while the queue is standing a retry is refused without queueing,
// a queued retry makes room for a first attempt when the queue is full, and
// a freed slot goes to a first attempt before any retry.
//
// A refusal (*Refusal) carries a pushback for the client: the time the
// queue needs to drain at the rate requests are being served, jittered
// between that and twice that so that the clients refused together do not
// come back together, or a negative pushback ("do not retry", gRFC A6) when
// the Shedder is shedding hard: in the last Interval it refused at least
// half of the requests that arrived. docs/SERVER.md draws the whole picture.
package retryserver
