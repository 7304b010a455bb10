//go:build noice

package main

import "context"

// icePeer is left out of this build (-tags noice), to measure what the
// pion option adds to a binary.
func icePeer(ctx context.Context, side, dir, server string, n int64, shared bool) result {
	return result{Engine: "pion/ice", Err: "built without pion (-tags noice)"}
}
