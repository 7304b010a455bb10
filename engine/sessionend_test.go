package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
	"github.com/ferrydrop/ferry/engine/internal/core"
)

// TestSessionEndedAtTheRelaySaysWhy: a session beyond the LAN that the
// relay's word ended (its path fell silent and the relay said the device
// dropped its wait for calls and has not looked since, or that it
// restarted) reads, while the send tries again, as a sentence about the
// device, where it read "Control stream: the device has not looked for
// calls at the relay R for 2s." (the stream that read the connection's
// end put its name before it). The error stays what it was underneath,
// and a retry follows as before.
func TestSessionEndedAtTheRelaySaysWhy(t *testing.T) {
	const who = "Desktop (3YEFXSUB)"
	for _, c := range []struct {
		err  error
		want string
	}{
		{&anywhere.NotLookingError{Relay: "relay.example:3478", For: 2300 * time.Millisecond},
			"Desktop (3YEFXSUB) has not looked for calls at relay relay.example:3478 for 2 s: Ferry is probably not running there (was it killed, or is the device asleep or cut off from the network?)."},
		{anywhere.ErrPeerRestarted, "Desktop (3YEFXSUB) restarted: it announced itself again through the relay."},
	} {
		err := fmt.Errorf("wire: read Offer body: %w", c.err) // as a stream's read may wrap it
		worded := sessionEndError(err, who)
		if got := core.EndOf(core.Dropped(worded, "Desktop"), "Desktop", false).Text; got != c.want {
			t.Errorf("%v reads\n%q, want\n%q", err, got, c.want)
		}
		if !errors.Is(worded, c.err) || core.Retryable(worded) != core.Retryable(err) {
			t.Errorf("%v: the worded error is not the same underneath", err)
		}
	}
	other := fmt.Errorf("wire: read Offer body: %w", errors.New("unexpected EOF"))
	if sessionEndError(other, who) != other {
		t.Errorf("another end is reworded: %v", sessionEndError(other, who))
	}
}
