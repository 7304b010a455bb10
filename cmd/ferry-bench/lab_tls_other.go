//go:build !linux

package main

import (
	"fmt"
	"runtime"
	"syscall"
)

// setCC fails for any explicit congestion control: TCP_CONGESTION is Linux's.
func setCC(cc string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		if cc == "" {
			return nil
		}
		return fmt.Errorf("choosing TCP congestion control %q is not supported on %s", cc, runtime.GOOS)
	}
}
