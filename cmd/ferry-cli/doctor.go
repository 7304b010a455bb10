package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
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
	r.Findings = append(r.Findings, checkListen(ctx, *port)...)
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
			if a := p.HostPorts(); len(a) > 0 {
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

// checkListen is listenFindings; tests replace it.
var checkListen = listenFindings

// listenFindings opens Ferry's listeners on port, as receive would, and
// says which transports could not listen there and why.
func listenFindings(ctx context.Context, port int) []discovery.Finding {
	dir, err := os.MkdirTemp("", "ferry-doctor-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(dir)
	e, err := engine.New(envOptions(engine.Options{ConfigDir: dir, Listen: ":" + strconv.Itoa(port), MaxPartialAge: -1}))
	if err != nil {
		return nil
	}
	defer e.Close()
	fix := fmt.Sprintf("If Ferry is receiving here already, that is why; otherwise free port %d or receive on another one (receive --listen).", port)
	if err := e.Start(ctx); err != nil {
		return []discovery.Finding{{Check: "listen", Severity: discovery.SeverityWarning,
			Message: fmt.Sprintf("Ferry cannot listen on port %d: %v.", port, err), Fix: fix}}
	}
	var out []discovery.Finding
	for _, st := range e.Listeners() {
		if st.Err != "" {
			out = append(out, discovery.Finding{Check: "listen", Severity: discovery.SeverityWarning,
				Message: fmt.Sprintf("%s cannot listen on port %d, so Ferry would receive over the other transport only: %s",
					strings.ToUpper(st.Transport), port, st.Err), Fix: fix})
		}
	}
	if len(out) == 0 {
		out = append(out, discovery.Finding{Check: "listen", Severity: discovery.SeverityOK,
			Message: fmt.Sprintf("QUIC (UDP) and TCP can both listen on port %d.", port)})
	}
	return out
}
