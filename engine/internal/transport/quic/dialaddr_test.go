package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/transport"
)

// TestDialsSayTheAddress: Dial, DialBridged and DialRaw begin alike
// (dialAddr: resolve, then one connection), so each says which address
// failed and keeps the cause for errors.Is: an address that does not
// resolve, and a dial whose context ended.
func TestDialsSayTheAddress(t *testing.T) {
	t.Parallel()
	dials := map[string]func(ctx context.Context, addr string) error{
		"Dial": func(ctx context.Context, addr string) error {
			_, err := Dial(ctx, addr, &tls.Config{}, transport.Config{})
			return err
		},
		"DialBridged": func(ctx context.Context, addr string) error {
			_, err := DialBridged(ctx, addr, &tls.Config{}, transport.Config{}, SharedDial{})
			return err
		},
		"DialRaw": func(ctx context.Context, addr string) error {
			_, err := DialRaw(ctx, addr, &tls.Config{}, transport.Config{})
			return err
		},
	}
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	for name, dial := range dials {
		err := dial(t.Context(), "no port")
		var ae *net.AddrError
		if err == nil || !strings.HasPrefix(err.Error(), "dial quic no port: ") || !errors.As(err, &ae) {
			t.Errorf("%s to an address without a port: %v", name, err)
		}
		err = dial(ended, "127.0.0.1:9")
		if err == nil || !strings.HasPrefix(err.Error(), "dial quic 127.0.0.1:9: ") || !errors.Is(err, context.Canceled) {
			t.Errorf("%s with its context ended: %v", name, err)
		}
	}
}
