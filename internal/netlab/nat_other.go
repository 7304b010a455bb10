//go:build !linux

package netlab

import (
	"context"
	"fmt"
	"runtime"
)

// NATAvailable reports why a NAT lab cannot be built here: it needs Linux.
func NATAvailable() error {
	return fmt.Errorf("%w: network namespaces and iptables need Linux, this is %s", ErrUnsupported, runtime.GOOS)
}

// NAT is a running NAT lab; on this OS none can be built.
type NAT struct{ spaces }

// NewNAT always fails on this OS with an error wrapping ErrUnsupported.
func NewNAT(ctx context.Context, cfg NATConfig) (*NAT, error) { return nil, NATAvailable() }

// Config is the configuration the lab was built with.
func (n *NAT) Config() NATConfig { return NATConfig{} }

// SetSharedLAN fails on this OS.
func (n *NAT) SetSharedLAN(ctx context.Context, up bool) error { return NATAvailable() }

// Close does nothing on this OS.
func (n *NAT) Close() error { return nil }

// SetImpairment fails: there is no NAT lab here.
func (n *NAT) SetImpairment(name string, im Impairment) error { return NATAvailable() }
