// Package retryotelgrpc records the calls of retrygrpc's interceptors in
// OpenTelemetry with gRPC's own metrics: gRFC A66's per-attempt and per-call
// instruments, and gRFC A96's retry instruments (retries, hedges and retry
// delay per call), which grpc-go itself does not emit. It builds on a
// retryotel.Telemetry, whose generic retry metrics and span events it
// records too.
//
//	tel, err := retryotel.New("inventory", retryotel.WithErrorClass(retryotelgrpc.ErrorClass))
//	g, err := retryotelgrpc.New(tel)
//	conn, err := grpc.NewClient(target,
//		grpc.WithDisableRetry(),
//		grpc.WithChainUnaryInterceptor(g.UnaryClientInterceptor(policy)),
//		grpc.WithChainStreamInterceptor(g.StreamClientInterceptor(policy)),
//		grpc.WithStatsHandler(g.StatsHandler()), // message sizes
//		grpc.WithTransportCredentials(creds))
//
// Stacking: otelgrpc's stats handler (or grpc-go's own OpenTelemetry
// plugin) sees each attempt of these interceptors as an RPC of its own and
// records it once; these metrics count the attempts once more under their
// own names, and count each call once. Nothing is counted twice under one
// name: don't enable grpc-go's plugin's grpc.client.* instruments as well,
// whose "call" is one of these attempts.
package retryotelgrpc
