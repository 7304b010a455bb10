package ui

import (
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
