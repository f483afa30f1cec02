package main

// Panics in the scheduler's goroutines.
//
// kube-scheduler runs plugins in goroutines guarded by utilruntime.HandleCrash, which
// logs a panic and then crashes the process. The harness keeps running instead
// (utilruntime.ReallyCrash is off): the panic is recorded for the case being run, which
// is reported with upstreamPanic and not compared, since kube-scheduler would have
// crashed on it. The goroutine that panicked has stopped; the rest of the cycle may
// have gone on without its work.

import (
	"context"
	"fmt"
	"sync"
)

type panicRecorder struct {
	mu    sync.Mutex
	panic string
}

var casePanics panicRecorder

func (p *panicRecorder) record(_ context.Context, r interface{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.panic == "" {
		p.panic = fmt.Sprint(r)
	}
}

func (p *panicRecorder) reset() {
	p.mu.Lock()
	p.panic = ""
	p.mu.Unlock()
}

func (p *panicRecorder) first() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.panic
}
