package app

import "context"

// followNetwork calls apply after every change that changed() reports (the
// engine's NetworkChanged: an address added or removed, a link up or down)
// until ctx ends: the status line names the addresses of now, not of the
// last time receiving was switched (issue 26, finding 6). It arms no timer.
func followNetwork(ctx context.Context, changed func() <-chan struct{}, apply func()) error {
	for {
		ch := changed() // taken before waiting: no change slips between two
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
			apply()
		}
	}
}
