package retryserver_test

import (
	"context"
	"testing"

	"github.com/seed-b8c8f69d/retry/retryserver"
)

// BenchmarkAdmit measures the Shedder's own cost: a request admitted at once
// and released, and a request refused at once (every slot taken, no queue).
func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	b.Run("outcome=served", func(b *testing.B) {
		s := retryserver.New()
		b.ReportAllocs()
		for b.Loop() {
			t, err := s.Admit(ctx, false)
			if err != nil {
				b.Fatal(err)
			}
			t.Success()
		}
	})
	b.Run("outcome=refused", func(b *testing.B) {
		s := retryserver.New(retryserver.Concurrency(1), retryserver.QueueLimit(0))
		hold, _ := s.Admit(ctx, false)
		defer hold.Drop()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Admit(ctx, false); err == nil {
				b.Fatal("admitted")
			}
		}
	})
}

// BenchmarkAdmitFixed is BenchmarkAdmit's served case with a fixed
// Concurrency instead of the default Limiter: the Limiter's share of it.
func BenchmarkAdmitFixed(b *testing.B) {
	ctx := context.Background()
	s := retryserver.New(retryserver.Concurrency(100))
	b.ReportAllocs()
	for b.Loop() {
		t, err := s.Admit(ctx, false)
		if err != nil {
			b.Fatal(err)
		}
		t.Success()
	}
}
