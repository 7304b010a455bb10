//go:build nop2p

package main

import (
	"context"
	"errors"
)

// The libp2p roles are left out of this build (-tags nop2p), to measure
// what the libp2p option adds to a binary.
func p2pPeer(ctx context.Context, side, dir string, n int64) result {
	return result{Engine: "go-libp2p", Err: "built without libp2p (-tags nop2p)"}
}

func p2pRelay(ctx context.Context, dir, listen string, infinite bool) error {
	return errors.New("built without libp2p (-tags nop2p)")
}
