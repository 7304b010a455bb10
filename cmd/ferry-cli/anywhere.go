package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/ferrydrop/ferry/cmd/internal/ferryenv"
	"github.com/ferrydrop/ferry/engine/relay"
)

func init() {
	register(command{name: "relay", summary: "run a relay so paired devices reach each other beyond the local network", run: runRelay})
}

func runRelay(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, _ := newFlagSet("relay", errOut)
	listen := fs.String("listen", ":3478", "`HOST:PORT` for TURN/STUN (UDP) and the mailbox (TCP)")
	public := fs.String("public-ip", "", "the `IP` devices reach this relay at (default: --listen's host)")
	secretFile := fs.String("secret-file", "", "the relay secret: a `FILE` holding one line of 16 characters or more (default: $FERRY_RELAY_SECRET); your devices need the same (--relay-secret-file). Without one, anyone who can reach the relay can relay through it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: relay takes no arguments", errUsage)
	}
	secret, err := relaySecret(*secretFile)
	if err != nil {
		return err
	}
	log := ferryenv.Logger()
	if log == nil {
		// Refusals and the warning of a relay without a secret are shown.
		log = slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	r, err := relay.Start(relay.Config{Listen: *listen, PublicIP: *public, Secret: secret, Log: log})
	if err != nil {
		return err
	}
	defer r.Close()
	if secret == "" {
		fmt.Fprintf(out, "relay listening on %s (TURN/STUN on UDP, mailbox on TCP), WITHOUT A SECRET: %s\n", r.Addr(), relay.NoSecretWarning)
	} else {
		fmt.Fprintf(out, "relay listening on %s (TURN/STUN on UDP, mailbox on TCP); only devices with its relay secret may use it\n", r.Addr())
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

// maxSecretFile bounds what is read of a relay secret file.
const maxSecretFile = 4096

// relaySecret is the relay secret from file, or else from
// $FERRY_RELAY_SECRET; "" when neither gives one. It never comes from a
// flag's value, which every user of the machine can read (ps).
func relaySecret(file string) (string, error) {
	raw := ferryenv.RelaySecret()
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("relay secret: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
		if err != nil {
			return "", fmt.Errorf("relay secret %s: %w", file, err)
		}
		if len(b) > maxSecretFile {
			return "", fmt.Errorf("relay secret %s: over %d bytes: it holds one line", file, maxSecretFile)
		}
		raw = string(b)
		if raw == "" {
			return "", fmt.Errorf("relay secret %s: the file is empty", file)
		}
	}
	if raw == "" {
		return "", nil
	}
	s, err := relay.CleanSecret(raw)
	if err != nil {
		if file != "" {
			return "", fmt.Errorf("relay secret %s: %w", file, err)
		}
		return "", fmt.Errorf("FERRY_RELAY_SECRET: %w", err)
	}
	return s, nil
}
