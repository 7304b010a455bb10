//go:build !linux

package netlab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"runtime"
)

// Available reports why a lab cannot be built here: it needs Linux.
func Available() error {
	return fmt.Errorf("%w: network namespaces and TUN need Linux, this is %s", ErrUnsupported, runtime.GOOS)
}

// Lab is a running network lab; on this OS none can be built.
type Lab struct{ spaces }

// spaces stands for a lab's namespaces; on this OS there are none.
type spaces struct{}

// New always fails on this OS with an error wrapping ErrUnsupported.
func New(ctx context.Context, cfg Config) (*Lab, error) { return nil, Available() }

// Seed is the seed the impairment randomness was started from.
func (l *Lab) Seed() uint64 { return 0 }

// Namespace is the real name of role's namespace.
func (l *spaces) Namespace(ns string) (string, error) { return "", Available() }

// Paths lists the path names in Config order.
func (l *Lab) Paths() []string { return nil }

// Addr is the address of namespace ns on the named path.
func (l *Lab) Addr(ns, pathName string) (netip.Addr, error) { return netip.Addr{}, Available() }

// MustAddr is Addr that panics on error.
func (l *Lab) MustAddr(ns, pathName string) netip.Addr { panic(Available()) }

// SetImpairment replaces the impairment of a path direction.
func (l *Lab) SetImpairment(pathName string, dir Dir, im Impairment) error { return Available() }

// Impairment returns the current impairment of a path direction.
func (l *Lab) Impairment(pathName string, dir Dir) (Impairment, error) {
	return Impairment{}, Available()
}

// Cut makes a path drop everything.
func (l *Lab) Cut(pathName string) error { return Available() }

// Restore undoes Cut.
func (l *Lab) Restore(pathName string) error { return Available() }

// Stats returns the counters of every path.
func (l *Lab) Stats() []PathStats { return nil }

// Command returns a command that fails to start on this OS.
func (l *spaces) Command(ctx context.Context, ns, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Err = Available()
	return cmd
}

// Run fails on this OS.
func (l *spaces) Run(ns string, cmd *exec.Cmd) error { return Available() }

// Do fails on this OS.
func (l *spaces) Do(ns string, fn func() error) error { return Available() }

// Listen fails on this OS.
func (l *spaces) Listen(ns, network, address string) (net.Listener, error) { return nil, Available() }

// ListenPacket fails on this OS.
func (l *spaces) ListenPacket(ns, network, address string) (net.PacketConn, error) {
	return nil, Available()
}

// ListenUDP fails on this OS.
func (l *spaces) ListenUDP(ns string, laddr netip.AddrPort) (*net.UDPConn, error) {
	return nil, Available()
}

// Dial fails on this OS.
func (l *spaces) Dial(ctx context.Context, ns, network, address string) (net.Conn, error) {
	return nil, Available()
}

// Close does nothing on this OS.
func (l *Lab) Close() error { return nil }
