// Package uiloop stands in for a GUI toolkit's main goroutine in tests and
// benchmarks: a Loop runs the functions handed to Do one at a time, in
// order, from a queue without bound (as Fyne's driver runs what fyne.Do
// hands it), on one OS thread, and notes the longest any ran (a stall:
// nothing is drawn meanwhile), the CPU time of the costliest and the
// longest any waited in the queue (how far the window lags). Only tests
// and benchmarks use it.
package uiloop

import (
	"runtime"
	"sync"
	"time"
)

// Loop is the stand-in goroutine; make it with New, start Run in a
// goroutine of its own, hand it work with Do.
type Loop struct {
	mu    sync.Mutex
	queue []queued
	stats Stats
	wake  chan struct{}
	done  chan struct{}
}

// Stats is what a Loop saw.
type Stats struct {
	Updates  int           // functions run
	MaxStall time.Duration // wall time of the longest
	MaxCPU   time.Duration // CPU time of the costliest (0 where the OS thread's CPU time is not read)
	MaxWait  time.Duration // the longest one waited in the queue
}

type queued struct {
	f  func()
	at time.Time
}

// New returns a Loop that has not started.
func New() *Loop {
	return &Loop{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Do queues f; it never blocks.
func (l *Loop) Do(f func()) {
	l.mu.Lock()
	l.queue = append(l.queue, queued{f, time.Now()})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run works the queue until stop is closed and the queue is empty, then
// closes Done.
func (l *Loop) Run(stop <-chan struct{}) {
	defer close(l.done)
	// One OS thread, as Fyne's: its CPU time is this goroutine's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.mu.Unlock()
			select {
			case <-l.wake:
				continue
			case <-stop:
				l.mu.Lock()
				empty := len(l.queue) == 0
				l.mu.Unlock()
				if empty {
					return
				}
				continue
			}
		}
		q := l.queue[0]
		l.queue = l.queue[1:]
		l.mu.Unlock()
		cpu := threadCPU()
		start := time.Now()
		q.f()
		stall := time.Since(start)
		cpu = threadCPU() - cpu
		l.mu.Lock()
		l.stats.Updates++
		l.stats.MaxStall = max(l.stats.MaxStall, stall)
		l.stats.MaxCPU = max(l.stats.MaxCPU, cpu)
		l.stats.MaxWait = max(l.stats.MaxWait, start.Sub(q.at))
		l.mu.Unlock()
	}
}

// Done is closed once Run has returned.
func (l *Loop) Done() <-chan struct{} { return l.done }

// Stats returns what the Loop has seen so far.
func (l *Loop) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}
