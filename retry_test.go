package retry

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNilFunction: Do and Retry panic on a nil fn before anything else, even
// with a done context.
func TestNilFunction(t *testing.T) {
	done, cancel := context.WithCancel(t.Context())
	cancel()
	for _, ctx := range []context.Context{t.Context(), done} {
		for _, opts := range [][]Option{nil, {MaxPushback(s1)}} {
			assert.PanicsWithValue(t, "retry: Do: nil function", func() { _ = Do(ctx, Delays(ms), nil, opts...) })
			assert.PanicsWithValue(t, "retry: Retry: nil function", func() {
				_, _ = Retry[int](ctx, Delays(ms), nil, opts...)
			})
		}
	}
}
