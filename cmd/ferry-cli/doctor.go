package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/ferrydrop/ferry/discovery"
)

func init() {
	register(command{
		name:    "doctor",
		summary: "explain why other devices may not be discovered",
		run:     runDoctor,
	})
}

// doctorFailed reports that discovery cannot work; exit code 1.
type doctorFailed struct{}

func (doctorFailed) Error() string {
	return "discovery cannot work as things stand (see the findings above)"
}
func (doctorFailed) ExitCode() int { return 1 }

// diagnose is discovery.Diagnose; tests replace it.
var diagnose = discovery.Diagnose

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

func runDoctor(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs, _ := newFlagSet("doctor", errOut)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for our own test advertisement")
	noSelfTest := fs.Bool("no-selftest", false, "do not advertise a test service on the network")
	port := fs.Int("port", mustAtoi(defaultPort), "the `PORT` receive listens on (QUIC and TCP), checked in the firewall rules")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *port <= 0 || *port > 65535 {
		return fmt.Errorf("%w: --port must be in 1..65535", errUsage)
	}
	r := diagnose(ctx, discovery.DiagnoseOptions{Ports: []int{*port}, SelfTestTimeout: *timeout, SkipSelfTest: *noSelfTest})
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		for _, f := range r.Findings {
			fmt.Fprintf(out, "%-9s %s\n", "["+string(f.Severity)+"]", f.Message)
			if f.Fix != "" {
				fmt.Fprintf(out, "%-9s -> %s\n", "", f.Fix)
			}
		}
		for _, p := range r.Peers {
			addr := ""
			if a := p.DialAddrs(); len(a) > 0 {
				addr = a[0]
			}
			fmt.Fprintf(out, "%-9s found %s (%s) at %s\n", "", p.Name, p.ShortID(), addr)
		}
	}
	if r.Worst() == discovery.SeverityError {
		return doctorFailed{}
	}
	return nil
}
