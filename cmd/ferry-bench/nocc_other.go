//go:build !linux

package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
)

func init() {
	register(command{
		name:    "no-cc",
		summary: "run a program that may not choose its TCP congestion control (Linux only)",
		run: func(ctx context.Context, args []string, out io.Writer) error {
			return fmt.Errorf("no-cc needs Linux (seccomp), this is %s", runtime.GOOS)
		},
	})
}
