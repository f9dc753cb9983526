package main

import (
	"runtime"
	"sync"
)

// parallel calls f(0), …, f(n-1), each on a goroutine of its own with at
// most GOMAXPROCS running at once, and returns when all have returned. The
// simulations it runs are independent and each deterministic, so the
// results do not depend on the order in which they finish.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}
