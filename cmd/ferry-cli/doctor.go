package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/internal/safetext"
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
	fs, cfg := newFlagSet("doctor", errOut)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for our own test advertisement")
	noSelfTest := fs.Bool("no-selftest", false, "do not advertise a test service on the network")
	port := fs.Int("port", mustAtoi(defaultPort), "the `PORT` receive listens on (QUIC and TCP), checked in the firewall rules")
	lsPort := fs.Int("localsend-port", localsend.DefaultPort, "the LocalSend `PORT` to check (0: skip the LocalSend checks)")
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
	listen := checkListen(ctx, *port)
	r.Findings = append(r.Findings, listen...)
	if *port == mustAtoi(defaultPort) {
		if dir, err := configDir(*cfg); err == nil {
			r.Findings = append(r.Findings, appPortFinding(dir, *port, portTaken(listen)))
		}
	}
	if *lsPort > 0 {
		r.Findings = append(r.Findings, checkLocalSend(*lsPort)...)
	}
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
			fmt.Fprintf(out, "%-9s found %s (%s) at %s\n", "", safetext.Name(p.Name), p.ShortID(), addr)
		}
	}
	if r.Worst() == discovery.SeverityError {
		return doctorFailed{}
	}
	return nil
}

// checkLocalSend is localSendFindings; tests replace it.
var checkLocalSend = localSendFindings

// localSendFindings says whether LocalSend's TCP and UDP port can be had
// and which interfaces join its multicast groups (joining announces nothing).
func localSendFindings(port int) []discovery.Finding {
	var out []discovery.Finding
	fix := fmt.Sprintf("If Ferry or LocalSend is running here already, that is why; otherwise free port %d (receive then uses the last port it used, or a free one, which devices that only scan will not find).", port)
	if ln, err := net.Listen("tcp", ":"+strconv.Itoa(port)); err != nil {
		out = append(out, discovery.Finding{Check: "localsend", Severity: discovery.SeverityWarning,
			Message: fmt.Sprintf("LocalSend's port %d (TCP) is taken: %v.", port, err), Fix: fix})
	} else {
		ln.Close()
		out = append(out, discovery.Finding{Check: "localsend", Severity: discovery.SeverityOK,
			Message: fmt.Sprintf("LocalSend devices can reach this one on port %d (TCP, HTTPS).", port)})
	}
	d, err := localsend.NewDiscoverer(localsend.DiscoveryConfig{Port: port, Info: localsend.Info{Fingerprint: "doctor"}, Interfaces: localsendInterfaces})
	if err != nil {
		return append(out, discovery.Finding{Check: "localsend", Severity: discovery.SeverityWarning,
			Message: fmt.Sprintf("LocalSend discovery cannot use UDP port %d: %v.", port, err), Fix: fix})
	}
	v4, v6 := d.JoinedInterfaces()
	d.Close()
	if len(v4) == 0 {
		return append(out, discovery.Finding{Check: "localsend", Severity: discovery.SeverityWarning,
			Message: "No interface joined LocalSend's multicast group " + localsend.MulticastIPv4 + ": LocalSend devices will not see this one announced.",
			Fix:     "Connect to a network (Wi-Fi or Ethernet); a VPN or a network without multicast needs the device's address typed in (send --protocol localsend --to HOST)."})
	}
	return append(out, discovery.Finding{Check: "localsend", Severity: discovery.SeverityOK,
		Message: fmt.Sprintf("LocalSend multicast: %s joined on %s; %s on %s.", localsend.MulticastIPv4, joinOr(v4), localsend.MulticastIPv6, joinOr(v6))})
}

func joinOr(names []string) string {
	if len(names) == 0 {
		return "no interface"
	}
	return strings.Join(names, ", ")
}

// appPortFile is where the app keeps the port it listened on last, in its
// config dir (app/port.go portFile): the port it listens on when the
// default one is taken.
const appPortFile = "listen-port"

// portTaken reports whether the listen check found the port taken.
func portTaken(listen []discovery.Finding) bool {
	for _, f := range listen {
		if f.Check == "listen" && f.Severity != discovery.SeverityOK {
			return true
		}
	}
	return false
}

// appPortFinding says which port the app listens on (issue 26, finding 9):
// the default one when it is free, else the last one it used (saved in
// dir), else one it picks at start, which its status line names.
func appPortFinding(dir string, port int, taken bool) discovery.Finding {
	if !taken {
		return discovery.Finding{Check: "port", Severity: discovery.SeverityOK,
			Message: fmt.Sprintf("Port %d, Ferry's default (QUIC over UDP, and TCP), is free here: the app listens there when it runs.", port)}
	}
	saved := 0
	if b, err := os.ReadFile(filepath.Join(dir, appPortFile)); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 && p <= 65535 {
			saved = p
		}
	}
	if saved != 0 && saved != port {
		return discovery.Finding{Check: "port", Severity: discovery.SeverityWarning,
			Message: fmt.Sprintf("Port %d is taken here, so the Ferry app listens on port %d instead, the last one it used.", port, saved),
			Fix:     fmt.Sprintf("Devices that only know port %d reach this one at port %d: give them that address, or free port %d.", port, saved, port)}
	}
	return discovery.Finding{Check: "port", Severity: discovery.SeverityWarning,
		Message: fmt.Sprintf("Port %d is taken here (by Ferry itself if it is running), so a new Ferry app would listen on a free port it picks at start; its window's status line names it.", port),
		Fix:     fmt.Sprintf("If Ferry is not running, free port %d.", port)}
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
