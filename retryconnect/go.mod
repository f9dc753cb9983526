module github.com/seed-b8c8f69d/retry/retryconnect

go 1.26.0

require (
	connectrpc.com/connect v1.21.1
	github.com/seed-b8c8f69d/retry v0.1.0
	google.golang.org/protobuf v1.36.12
)
