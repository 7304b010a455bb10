// Package clock is the time that drives Ferry's timers: the time of day,
// timers, tickers and functions run after a delay. Components take a Clock
// in their options (nil means the system clock, Real); tests give them a
// Fake and move it on by hand, so a retry's back-off, a prompt's expiry or a
// dial race's head start is exercised without waiting for it and without
// asserting how long anything took. The shape is tailscale's tstime.Clock.
//
// Socket deadlines stay on the system clock: the kernel and quic-go keep
// them, and no fake can move them.
package clock

import "time"

// Clock tells the time and makes timers that fire by it.
type Clock interface {
	// Now is the current time.
	Now() time.Time
	// NewTimer returns a timer that sends the time on its channel once,
	// after d.
	NewTimer(d time.Duration) (Timer, <-chan time.Time)
	// NewTicker returns a ticker that sends the time on its channel every
	// d (a slow reader misses ticks, as with time.Ticker). d must be > 0.
	NewTicker(d time.Duration) (Ticker, <-chan time.Time)
	// AfterFunc runs f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer of a Clock (time.Timer's methods).
type Timer interface {
	// Stop prevents the timer from firing; it reports whether it stopped
	// the timer before it fired.
	Stop() bool
	// Reset makes the timer fire after d from now; it reports whether the
	// timer was active.
	Reset(d time.Duration) bool
}

// Ticker is a ticker of a Clock (time.Ticker's methods).
type Ticker interface {
	// Stop turns the ticker off.
	Stop()
	// Reset makes the ticker tick every d from now.
	Reset(d time.Duration)
}

// Or returns c, or the system clock when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Real is the system clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// NewTimer is time.NewTimer.
func (Real) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := time.NewTimer(d)
	return t, t.C
}

// NewTicker is time.NewTicker.
func (Real) NewTicker(d time.Duration) (Ticker, <-chan time.Time) {
	t := time.NewTicker(d)
	return t, t.C
}

// AfterFunc is time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
