module github.com/seed-b8c8f69d/retry/retryconnect

go 1.26.0

replace github.com/seed-b8c8f69d/retry => ../

require (
	connectrpc.com/connect v1.21.1
	github.com/seed-b8c8f69d/retry v0.0.0-00010101000000-000000000000
	google.golang.org/protobuf v1.36.12
)
