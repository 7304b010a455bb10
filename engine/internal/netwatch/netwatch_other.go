//go:build !linux

package netwatch

import "errors"

// subscribe has no notifications to offer here: the watcher polls.
func subscribe() (<-chan struct{}, func(), error) {
	return nil, nil, errors.New("no change notifications on this platform")
}
