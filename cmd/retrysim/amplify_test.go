package main

import (
	"math"
	"testing"
)

func TestAmplifyWithoutBudget(t *testing.T) {
	for _, c := range []struct{ depth, attempts int }{{1, 1}, {1, 3}, {2, 3}, {3, 3}, {4, 2}, {3, 5}} {
		r := amplify(amplifyConfig{depth: c.depth, attempts: c.attempts, requests: 1, ratio: 0.1, reserve: 10})
		if want := math.Pow(float64(c.attempts), float64(c.depth)); r.Without != want {
			t.Errorf("depth %d, attempts %d: %v calls at the bottom, want %v", c.depth, c.attempts, r.Without, want)
		}
	}
}

func TestAmplifyBudget(t *testing.T) {
	// No reserve and no ratio: the Budgets refuse every retry.
	r := amplify(amplifyConfig{depth: 3, attempts: 3, requests: 50, ratio: 0, reserve: 0})
	if r.With != 1 {
		t.Errorf("empty budgets: %v calls per request at the bottom, want 1", r.With)
	}
	// Budgets too large to run out change nothing.
	r = amplify(amplifyConfig{depth: 3, attempts: 3, requests: 50, ratio: 10, reserve: 1000000})
	if r.With != 27 {
		t.Errorf("ample budgets: %v calls per request at the bottom, want 27", r.With)
	}
	// The default: each service adds at most its ratio, plus its reserve
	// spread over the requests.
	r = amplify(amplifyConfig{depth: 3, attempts: 3, requests: 1000, ratio: 0.1, reserve: 10})
	if r.With < 1.1 || r.With > 1.1*1.1*1.1+0.05 || r.first[3] >= 27 {
		t.Errorf("NewBudget(0.1, 10): %v per request, first request %d; want about 1.33 and fewer than 27", r.With, r.first[3])
	}
}
