package ui

import (
	"context"
	"errors"
	"testing"
)

// A hand-off to a window whose queue closed as the app stopped (Fyne's
// driver closes it after the check fyne.Do makes) is dropped, where the
// send on the closed queue panicked in the goroutine that handed it over
// and the app exited 2; any other panic goes on.
func TestHandOffAfterTheQueueClosedIsDropped(t *testing.T) {
	queue := make(chan func(), 1)
	close(queue)
	ran := false
	handOff(func(f func()) { queue <- f }, func() { ran = true })
	if ran {
		t.Fatal("a function handed to a closed queue ran")
	}
	boom := errors.New("boom")
	defer func() {
		if r := recover(); r != boom {
			t.Fatalf("recovered %v, want the other panic to go on", r)
		}
	}()
	handOff(func(func()) { panic(boom) }, func() {})
	t.Fatal("the other panic was taken back")
}

// DoAndWait returns when its context ends though the function it handed
// over never ran: what Fyne 2.7.1's driver does to a function handed to it
// as its loop stops (fyne.DoAndWait then waited for good, and held the
// app's quit); and it says whether the function ran.
func TestDoAndWaitEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	dropped := make(chan struct{})
	ended := make(chan bool)
	go func() { ended <- doAndWait(ctx, func(func()) { close(dropped) }, func() {}) }()
	<-dropped
	cancel()
	if <-ended {
		t.Fatal("DoAndWait said a dropped function ran")
	}
	if !doAndWait(t.Context(), func(f func()) { go f() }, func() {}) {
		t.Fatal("DoAndWait said a function that ran did not")
	}
}
