package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/ferrydrop/ferry/engine/relay"
)

func init() {
	register(command{name: "relay", summary: "run a relay so paired devices reach each other beyond the local network", run: runRelay})
}

func runRelay(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, _ := newFlagSet("relay", errOut)
	listen := fs.String("listen", ":3478", "`HOST:PORT` for TURN/STUN (UDP) and the mailbox (TCP)")
	public := fs.String("public-ip", "", "the `IP` devices reach this relay at (default: --listen's host)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: relay takes no arguments", errUsage)
	}
	r, err := relay.Start(relay.Config{Listen: *listen, PublicIP: *public})
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Fprintf(out, "relay listening on %s (TURN/STUN on UDP, mailbox on TCP)\n", r.Addr())
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}
