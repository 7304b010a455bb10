package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/internal/safetext"
)

func init() {
	register(command{
		name:    "peers",
		summary: "list Ferry and LocalSend devices on the local network",
		run:     runPeers,
	})
}

func runPeers(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, cfg := newFlagSet("peers", errOut)
	timeout := fs.Duration("timeout", 3*time.Second, "how long to listen, e.g. 3s")
	asJSON := fs.Bool("json", false, "print one JSON object per peer")
	lsScan := fs.Bool("localsend-scan", false, "also look for LocalSend devices by registering with every host of this device's own /24 networks (where multicast does not pass; bounded by --timeout)")
	withLS := fs.Bool("localsend", true, "also list LocalSend devices (announces this device on LocalSend's multicast groups)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *timeout <= 0 {
		return fmt.Errorf("%w: --timeout must be positive", errUsage)
	}
	dir, err := configDir(*cfg)
	if err != nil {
		return err
	}
	// The engine gives our own ID (so we do not list ourselves), the devices
	// we remember and the prober that finds them where multicast is blocked.
	e, err := engine.New(envOptions(engine.Options{ConfigDir: dir}))
	if err != nil {
		return err
	}
	defer e.Close()
	d, err := newDiscovery(e)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *withLS {
		// LocalSend devices join the same table; one that speaks both is
		// one device.
		if stop, err := watchLocalSend(e, d, *lsScan); err != nil {
			fmt.Fprintf(errOut, "LocalSend devices were not looked for: %v\n", err)
		} else {
			defer stop()
		}
	}
	if err := d.Run(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("cannot listen for devices (%v); run \"ferry-cli doctor\" to see why", err)
	}
	peers := d.Peers()
	if err := d.Err(); err != nil {
		fmt.Fprintf(errOut, "Local network discovery is not working (%v); only remembered devices were looked for. Run \"ferry-cli doctor\" to see why.\n", err)
	}
	// Ferry devices first (as discovery.Peer, with a "localsend" object
	// when they speak it too), then the devices that speak only LocalSend
	// (protocol, alias, fingerprint, model, type, address).
	var ferry, lsOnly []discovery.Peer
	for _, p := range peers {
		if p.SpeaksFerry() {
			ferry = append(ferry, p)
		} else if p.SpeaksLocalSend() {
			lsOnly = append(lsOnly, p)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(out)
		for _, p := range ferry {
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
		for _, p := range lsOnly {
			if err := printLocalSendPeer(out, p, true); err != nil {
				return err
			}
		}
		return nil
	}
	if len(peers) == 0 {
		fmt.Fprintf(errOut, "No devices found within %v. Run \"ferry-cli doctor\" to see why.\n", *timeout)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tADDRESS\tOS\tSOURCE")
	for _, p := range ferry {
		addr := "-"
		if a := p.HostPorts(); len(a) > 0 {
			addr = a[0]
			if len(a) > 1 {
				addr += fmt.Sprintf(" (+%d)", len(a)-1)
			}
		}
		src := string(p.Source)
		if p.SpeaksLocalSend() {
			src += " + LocalSend"
		}
		// A remembered device's name is what its hello said: escaped, as
		// every peer's words are where they are shown.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", strings.ReplaceAll(safetext.Name(p.Name), "\t", " "), p.ShortID(), addr, safetext.Name(p.OS), src)
	}
	for _, p := range lsOnly {
		if err := printLocalSendPeer(tw, p, false); err != nil {
			return err
		}
	}
	return tw.Flush()
}
