package main

// Panics in the scheduler's goroutines.
//
// kube-scheduler runs plugins in goroutines guarded by utilruntime.HandleCrash, which
// logs a panic and then crashes the process. The harness keeps running instead
// (utilruntime.ReallyCrash is off): the panic is recorded for the case being run, which
// is reported with upstreamPanic and not compared, since kube-scheduler would have
// crashed on it. The goroutine that panicked has stopped; the rest of the cycle may
// have gone on without its work (the node's later Score plugins, for one).

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// panicGrace is how long a case waits, once its cycle is over, for the panic handlers
// of a goroutine that panicked in it: upstream's ParallelizeUntil marks the goroutine
// done (wg.Done) before its deferred HandleCrash recovers and runs them.
const panicGrace = 5 * time.Millisecond

type panicRecorder struct {
	mu     sync.Mutex
	count  int
	panic  string
	marked int
}

var casePanics panicRecorder

func (p *panicRecorder) record(_ context.Context, r interface{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count++
	p.panic = fmt.Sprint(r)
}

// reset starts a case: panics from now on are its own.
func (p *panicRecorder) reset() {
	p.mu.Lock()
	p.marked = p.count
	p.mu.Unlock()
}

// first is the case's panic ("" if none), after the grace period.
func (p *panicRecorder) first() string {
	time.Sleep(panicGrace)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.count == p.marked {
		return ""
	}
	return p.panic
}
