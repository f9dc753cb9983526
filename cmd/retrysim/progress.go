package main

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// progress draws a one-line progress bar on stderr while a long simulation
// runs, and only when stderr is a terminal: piped or redirected output never
// sees it. It draws nothing during the first quarter second, so quick runs
// stay silent, and erases itself when done. It is safe for concurrent use.
//
// It is a few lines rather than a dependency: a counter and a carriage
// return are all the simulations need.
type progress struct {
	o     *output
	label string
	total int
	start time.Time

	mu    sync.Mutex
	done  int
	drawn bool
	last  time.Time
}

// newProgress returns a bar for total units of work.
func newProgress(o *output, label string, total int) *progress {
	return &progress{o: o, label: label, total: total, start: time.Now()}
}

// add counts one finished unit and redraws at most ten times a second.
func (p *progress) add() {
	if !p.o.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	now := time.Now()
	if now.Sub(p.start) < 250*time.Millisecond || now.Sub(p.last) < 100*time.Millisecond && p.done < p.total {
		return
	}
	p.last, p.drawn = now, true
	const width = 30
	filled := p.done * width / max(p.total, 1)
	fmt.Fprintf(p.o.stderr, "\r%s [%s%s] %3d%%", p.label,
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), p.done*100/max(p.total, 1))
}

// finish erases the bar if it was drawn.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintf(p.o.stderr, "\r%s\r", strings.Repeat(" ", len(p.label)+40))
	}
}
