package main

import "time"

// hedgeEvent is one entry of the hedge model's event queue: at time at,
// something of the given kind happens to the leaf, copy or server id (see
// the ev constants), if its generation is still gen.
type hedgeEvent struct {
	at   time.Duration
	seq  uint64 // insertion order, to break ties
	kind uint8
	id   int32
	gen  uint32
}

func (e *hedgeEvent) before(f *hedgeEvent) bool {
	if e.at != f.at {
		return e.at < f.at
	}
	return e.seq < f.seq
}

// hedgeQueue orders the events by time, then by insertion. Most events come
// a constant delay after the one that makes them (every message crosses the
// network in the same time, most hedge timers have the same delay), so they
// are pushed in order of time: such an event goes to the end of a FIFO lane
// when it is not earlier than the lane's last, and only the others go to a
// binary heap. pop takes the earliest of the lanes' heads and the heap's
// top, which keeps the order exact and the heap small.
type hedgeQueue struct {
	heaps [2]hedgeHeap
	lanes [2]hedgeLane
	seq   uint64
}

// Lanes, and heaps for the events that fit no lane.
const (
	laneNet   = 0  // copies, answers and cancels
	laneTimer = 1  // hedge timers
	heapBusy  = -1 // servers' completions
	heapRare  = -2 // arrivals and pauses, kept apart so that the busy heap stays small
)

// push adds an event to lane if it keeps that lane in order, otherwise to
// the busy heap; a negative lane names a heap.
func (q *hedgeQueue) push(lane int, at time.Duration, kind uint8, id int32, gen uint32) {
	q.seq++
	e := hedgeEvent{at: at, seq: q.seq, kind: kind, id: id, gen: gen}
	switch {
	case lane >= 0 && q.lanes[lane].accepts(at):
		q.lanes[lane].push(e)
	case lane == heapRare:
		q.heaps[1].push(e)
	default:
		q.heaps[0].push(e)
	}
}

// len returns the number of events in the queue.
func (q *hedgeQueue) len() int {
	n := len(q.heaps[0]) + len(q.heaps[1])
	for i := range q.lanes {
		n += len(q.lanes[i].events) - q.lanes[i].head
	}
	return n
}

// peekAt returns the time of the earliest event. The queue must not be
// empty.
func (q *hedgeQueue) peekAt() time.Duration {
	e, _ := q.earliest()
	return e.at
}

// pop removes and returns the earliest event. The queue must not be empty.
func (q *hedgeQueue) pop() hedgeEvent {
	_, from := q.earliest()
	if from >= 2 {
		return q.heaps[from-2].pop()
	}
	return q.lanes[from].pop()
}

// earliest returns the earliest event and where it is: 0 and 1 are the
// lanes, 2 and 3 the heaps. The queue must not be empty.
func (q *hedgeQueue) earliest() (*hedgeEvent, int) {
	var best *hedgeEvent
	from := 0 // 0, 1: a lane; 2, 3: a heap
	for i := range q.lanes {
		if e := q.lanes[i].peek(); e != nil && (best == nil || e.before(best)) {
			best, from = e, i
		}
	}
	for i := range q.heaps {
		if len(q.heaps[i]) > 0 && (best == nil || q.heaps[i][0].before(best)) {
			best, from = &q.heaps[i][0], 2+i
		}
	}
	return best, from
}

// hedgeLane is a FIFO of events in order of time.
type hedgeLane struct {
	events []hedgeEvent // from events[head]
	head   int
}

func (l *hedgeLane) accepts(at time.Duration) bool {
	return l.head == len(l.events) || l.events[len(l.events)-1].at <= at
}

func (l *hedgeLane) push(e hedgeEvent) {
	if l.head == len(l.events) {
		l.events, l.head = l.events[:0], 0
	} else if l.head > 1024 && l.head > len(l.events)/2 {
		n := copy(l.events, l.events[l.head:])
		l.events, l.head = l.events[:n], 0
	}
	l.events = append(l.events, e)
}

func (l *hedgeLane) peek() *hedgeEvent {
	if l.head == len(l.events) {
		return nil
	}
	return &l.events[l.head]
}

func (l *hedgeLane) pop() hedgeEvent {
	e := l.events[l.head]
	l.head++
	return e
}

// hedgeHeap is a 4-ary min-heap of events, written out so that no entry is
// boxed: four children per node make it half as deep as a binary heap, and
// popping, which every event does, cheaper.
type hedgeHeap []hedgeEvent

func (h *hedgeHeap) push(e hedgeEvent) {
	*h = append(*h, e)
	q := *h
	i := len(q) - 1
	for i > 0 {
		parent := (i - 1) / 4
		if !e.before(&q[parent]) {
			break
		}
		q[i] = q[parent]
		i = parent
	}
	q[i] = e
}

func (h *hedgeHeap) pop() hedgeEvent {
	q := *h
	top := q[0]
	last := q[len(q)-1]
	q = q[:len(q)-1]
	*h = q
	if len(q) == 0 {
		return top
	}
	i := 0
	for {
		first := 4*i + 1
		if first >= len(q) {
			break
		}
		small := first
		for c := first + 1; c < first+4 && c < len(q); c++ {
			if q[c].before(&q[small]) {
				small = c
			}
		}
		if !q[small].before(&last) {
			break
		}
		q[i] = q[small]
		i = small
	}
	q[i] = last
	return top
}
