package discovery

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/engine/addr"
)

// Severity grades a Finding.
type Severity string

// Severities, from harmless to blocking.
const (
	SeverityOK      Severity = "ok"
	SeverityInfo    Severity = "info"
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

func (s Severity) rank() int {
	return map[Severity]int{SeverityOK: 0, SeverityInfo: 1, SeverityWarning: 2, SeverityError: 3}[s]
}

// Finding is one thing Diagnose found: what, in a plain sentence, and
// what the user can do about it.
type Finding struct {
	Check    string   `json:"check"` // short machine name, e.g. "interfaces", "firewall"
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Fix      string   `json:"fix,omitempty"`
}

// InterfaceInfo describes one network interface as Diagnose saw it.
type InterfaceInfo struct {
	Name  string         `json:"name"`
	Flags net.Flags      `json:"flags"` // net.Flags bits; String() names them
	Up    bool           `json:"up"`
	Addrs []netip.Prefix `json:"addrs,omitempty"`
	VPN   bool           `json:"vpn,omitempty"`
}

// Multicast reports whether mDNS can use the interface.
func (i InterfaceInfo) Multicast() bool {
	return i.Flags&net.FlagUp != 0 && i.Flags&net.FlagMulticast != 0 && i.Flags&net.FlagLoopback == 0
}

// Report is the result of Diagnose.
type Report struct {
	Findings   []Finding       `json:"findings"`
	Interfaces []InterfaceInfo `json:"interfaces"`
	Peers      []Peer          `json:"peers,omitempty"` // Ferry devices heard during the self-test
}

// Worst returns the most severe finding's severity (SeverityOK when empty).
func (r Report) Worst() Severity {
	w := SeverityOK
	for _, f := range r.Findings {
		if f.Severity.rank() > w.rank() {
			w = f.Severity
		}
	}
	return w
}

// DiagnoseOptions configure Diagnose. The zero value checks everything
// with the real system.
type DiagnoseOptions struct {
	// Ports are our own listening ports (QUIC, TCP) to look for in firewall rules.
	Ports []int
	// SelfTestTimeout bounds the wait for our own probe advertisement
	// (default 2 s).
	SelfTestTimeout time.Duration
	// SkipSelfTest skips advertising and browsing (no packets are sent).
	SkipSelfTest bool
	// Interfaces lists interfaces (default: the system's).
	Interfaces func() ([]InterfaceInfo, error)
	// FirewallRules returns the firewall rule set as text (iptables-save or
	// nft list ruleset output); default runs those commands.
	FirewallRules func(ctx context.Context) (string, error)
}

// Diagnose explains why peers may be invisible: interfaces, the mDNS
// socket, firewall rules and whether our own advertisement comes back.
func Diagnose(ctx context.Context, opts DiagnoseOptions) Report {
	if opts.Interfaces == nil {
		opts.Interfaces = SystemInterfaces
	}
	if opts.FirewallRules == nil {
		opts.FirewallRules = systemFirewallRules
	}
	if opts.SelfTestTimeout <= 0 {
		opts.SelfTestTimeout = 2 * time.Second
	}
	var r Report
	ifaces, err := opts.Interfaces()
	if err != nil {
		r.Findings = append(r.Findings, Finding{Check: "interfaces", Severity: SeverityError,
			Message: "Could not list network interfaces: " + err.Error() + ".",
			Fix:     "Check that this program may read the network configuration."})
	}
	r.Interfaces = ifaces
	r.Findings = append(r.Findings, checkInterfaces(ifaces)...)
	usable := slices.ContainsFunc(ifaces, InterfaceInfo.Multicast)
	if usable {
		r.Findings = append(r.Findings, checkMDNSSocket())
	}
	rules, err := opts.FirewallRules(ctx)
	if err != nil {
		r.Findings = append(r.Findings, Finding{Check: "firewall", Severity: SeverityInfo,
			Message: "Could not read the firewall rules (" + err.Error() + "), so they were not checked.",
			Fix:     "Run ferry-cli doctor as root to include the firewall check."})
	} else {
		r.Findings = append(r.Findings, checkFirewall(rules, opts.Ports)...)
	}
	if usable && !opts.SkipSelfTest {
		f, peers := selfTest(ctx, opts.SelfTestTimeout)
		r.Findings = append(r.Findings, f)
		r.Peers = peers
		if f.Severity == SeverityOK {
			if len(peers) == 0 {
				r.Findings = append(r.Findings, Finding{Check: "peers", Severity: SeverityInfo,
					Message: "No other Ferry device answered within " + opts.SelfTestTimeout.String() + ".",
					Fix:     "Make sure Ferry is open with receiving on, on the other device, on the same network (guest Wi-Fi and \"AP isolation\" keep devices apart)."})
			} else {
				r.Findings = append(r.Findings, Finding{Check: "peers", Severity: SeverityOK,
					Message: fmt.Sprintf("%d other Ferry device(s) answered.", len(peers))})
			}
		}
	}
	return r
}

// SystemInterfaces lists the system's interfaces for Diagnose.
func SystemInterfaces() ([]InterfaceInfo, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]InterfaceInfo, 0, len(ifaces))
	for _, ifi := range ifaces {
		info := InterfaceInfo{Name: ifi.Name, Flags: ifi.Flags, Up: ifi.Flags&net.FlagUp != 0}
		if addrs, err := ifi.Addrs(); err == nil {
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok {
					if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
						ones, _ := ipn.Mask.Size()
						info.Addrs = append(info.Addrs, netip.PrefixFrom(ip.Unmap(), ones))
					}
				}
			}
		}
		info.VPN = looksLikeVPN(info)
		out = append(out, info)
	}
	return out, nil
}

var vpnPrefixes = []string{"tun", "tap", "wg", "ppp", "utun", "ipsec", "tailscale", "zt", "nordlynx", "vpn", "gpd", "cscotun"}

func looksLikeVPN(i InterfaceInfo) bool {
	name := strings.ToLower(i.Name)
	for _, p := range vpnPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return i.Flags&net.FlagPointToPoint != 0
}

func checkInterfaces(ifaces []InterfaceInfo) []Finding {
	var up, multicast, vpn []string
	hasV4 := false
	for _, i := range ifaces {
		if !i.Up || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		up = append(up, i.Name)
		if i.VPN || looksLikeVPN(i) {
			vpn = append(vpn, i.Name)
		}
		if i.Multicast() {
			multicast = append(multicast, i.Name)
			for _, a := range i.Addrs {
				if a.Addr().Is4() {
					hasV4 = true
				}
			}
		}
	}
	var out []Finding
	switch {
	case len(up) == 0:
		out = append(out, Finding{Check: "interfaces", Severity: SeverityError,
			Message: "Only the loopback interface is up: this device is not connected to any network.",
			Fix:     "Connect to Wi-Fi or Ethernet, then try again."})
	case len(multicast) == 0:
		out = append(out, Finding{Check: "interfaces", Severity: SeverityError,
			Message: "No network interface that is up supports multicast (" + strings.Join(up, ", ") + "), so automatic discovery cannot work.",
			Fix:     "Connect through Wi-Fi or Ethernet instead, or add the other device by address (ferry-cli send --to HOST:PORT)."})
	default:
		out = append(out, Finding{Check: "interfaces", Severity: SeverityOK,
			Message: "Multicast-capable interfaces: " + strings.Join(multicast, ", ") + "."})
		if !hasV4 {
			out = append(out, Finding{Check: "interfaces", Severity: SeverityInfo,
				Message: "No multicast interface has an IPv4 address; discovery relies on IPv6 only.",
				Fix:     "If the other device has no IPv6, get an IPv4 address (DHCP) on this network."})
		}
	}
	if len(vpn) > 0 {
		out = append(out, Finding{Check: "vpn", Severity: SeverityWarning,
			Message: "A VPN interface is up (" + strings.Join(vpn, ", ") + "): VPNs usually carry no multicast and may route local traffic away.",
			Fix:     "Disconnect the VPN or allow local network access in its settings; devices you exchanged files with before are still probed directly."})
	}
	return out
}

// checkMDNSSocket tries to open and join the mDNS port as the browser does.
func checkMDNSSocket() Finding {
	ifaces, err := multicastInterfaces(net.Interfaces)
	if err == nil {
		var c *mdnsConn
		c, err = openMDNS()
		if err == nil {
			n := c.join(ifaces)
			c.close()
			if n == 0 {
				err = ErrNoMulticast
			}
		}
		if err == nil {
			return Finding{Check: "mdns-socket", Severity: SeverityOK, Message: "UDP port 5353 (mDNS) can be opened and joined."}
		}
	}
	return Finding{Check: "mdns-socket", Severity: SeverityError,
		Message: "Cannot open or join UDP port 5353 for mDNS: " + err.Error() + ".",
		Fix:     "Another program may hold port 5353 exclusively; Avahi and other mDNS responders can share it, so stop the one that does not (see: ss -ulpn 'sport = :5353')."}
}

func systemFirewallRules(ctx context.Context) (string, error) {
	var errs []error
	for _, cmd := range [][]string{{"nft", "list", "ruleset"}, {"iptables-save"}} {
		if _, err := exec.LookPath(cmd[0]); err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var out, stderr bytes.Buffer
		c := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
		c.Stdout, c.Stderr = &out, &stderr
		err := c.Run()
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v %s", cmd[0], err, strings.TrimSpace(stderr.String())))
			continue
		}
		return out.String(), nil
	}
	if len(errs) == 0 {
		return "", errors.New("neither nft nor iptables-save is installed")
	}
	return "", errors.Join(errs...)
}

// checkFirewall reads iptables-save or nft ruleset text with simple
// heuristics: an INPUT chain that drops by default without accepting
// 5353, or rules that drop 5353 or our ports.
func checkFirewall(rules string, ports []int) []Finding {
	var out []Finding
	lines := strings.Split(rules, "\n")
	inputDrops := false
	inInput := false
	accepts := map[string]bool{}
	drops := map[string]bool{}
	watch := []string{"5353"}
	for _, p := range ports {
		if p > 0 {
			watch = append(watch, strconv.Itoa(p))
		}
	}
	for _, raw := range lines {
		l := strings.ToLower(strings.TrimSpace(raw))
		switch {
		case strings.HasPrefix(l, ":input drop"): // iptables-save policy line
			inputDrops = true
		case strings.HasPrefix(l, "chain "):
			inInput = strings.HasPrefix(l, "chain input")
		case inInput && strings.Contains(l, "hook input") && strings.Contains(l, "policy drop"):
			inputDrops = true
		}
		isInput := strings.HasPrefix(l, "-a input") || inInput
		if !isInput {
			continue
		}
		// iptables: "-a input -j drop" with no match drops everything after it.
		if strings.HasPrefix(l, "-a input") && (strings.HasSuffix(l, "-j drop") || strings.HasSuffix(l, "-j reject")) &&
			len(strings.Fields(l)) == 4 {
			inputDrops = true
		}
		if inInput && (l == "drop" || l == "reject") {
			inputDrops = true
		}
		for _, p := range watch {
			if !containsPort(l, p) {
				continue
			}
			switch {
			case strings.Contains(l, "accept"):
				accepts[p] = true
			case strings.Contains(l, "drop"), strings.Contains(l, "reject"):
				drops[p] = true
			}
		}
	}
	for _, p := range watch {
		what := "port " + p
		if p == "5353" {
			what = "UDP port 5353 (mDNS)"
		}
		switch {
		case drops[p]:
			out = append(out, Finding{Check: "firewall", Severity: SeverityWarning,
				Message: "A firewall rule drops or rejects " + what + ": other devices cannot discover or reach this one.",
				Fix:     "Allow incoming " + what + " on the local network (e.g. ufw allow 5353/udp, or firewall-cmd --add-service=mdns)."})
		case inputDrops && !accepts[p]:
			out = append(out, Finding{Check: "firewall", Severity: SeverityWarning,
				Message: "The firewall drops incoming traffic by default and no rule accepts " + what + ".",
				Fix:     "Allow incoming " + what + " on the local network (e.g. ufw allow 5353/udp, or firewall-cmd --add-service=mdns)."})
		}
	}
	if len(out) == 0 {
		out = append(out, Finding{Check: "firewall", Severity: SeverityOK, Message: "No firewall rule seems to block mDNS or Ferry's ports."})
	}
	return out
}

// containsPort reports whether a rule line names port p as a whole number.
func containsPort(l, p string) bool {
	for i := 0; ; {
		j := strings.Index(l[i:], p)
		if j < 0 {
			return false
		}
		j += i
		before := j == 0 || !isDigit(l[j-1])
		after := j+len(p) == len(l) || !isDigit(l[j+len(p)])
		if before && after {
			return true
		}
		i = j + len(p)
	}
}

// selfTest advertises a throw-away instance and browses for it: if it does
// not come back, multicast does not work on this host.
func selfTest(ctx context.Context, timeout time.Duration) (Finding, []Peer) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	id := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)
	d, err := New(Options{})
	if err != nil {
		return Finding{Check: "self-test", Severity: SeverityError, Message: err.Error()}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	events, unsub := d.Subscribe(64)
	defer unsub()
	runErr := make(chan error, 1)
	go func() { runErr <- d.Run(ctx) }()
	adv, err := Advertise(Service{Name: "ferry-doctor-" + strings.ToLower(id[:6]), ID: id, Addrs: []addr.Addr{addr.New(addr.QUIC, ":9")}})
	if err == nil {
		err = adv.Err()
		defer adv.Close()
	}
	if err != nil {
		cancel()
		<-runErr
		return Finding{Check: "self-test", Severity: SeverityError,
			Message: "Could not advertise on the network: " + err.Error() + ".",
			Fix:     "Check the interface and mDNS findings above."}, nil
	}
	start := time.Now()
	seen := false
	var took time.Duration
	for running := true; running; {
		select {
		case e := <-events:
			if !seen && e.Peer.ID == id && e.Kind == PeerAppeared {
				seen, took = true, time.Since(start)
			}
		case err := <-runErr:
			running = false
			if ctx.Err() == nil {
				return Finding{Check: "self-test", Severity: SeverityError,
					Message: "Could not browse the network: " + err.Error() + ".",
					Fix:     "Check the interface and mDNS findings above."}, nil
			}
		}
	}
	var others []Peer
	for _, p := range d.Peers() {
		if p.ID != id {
			others = append(others, p)
		}
	}
	if !seen {
		why := ""
		if err := d.Err(); err != nil {
			why = " (" + err.Error() + ")"
		}
		return Finding{Check: "self-test", Severity: SeverityWarning,
			Message: "Our own test advertisement did not come back within " + timeout.String() + why + ": multicast does not seem to work here, so other devices probably cannot see this one either.",
			Fix:     "Check firewall rules for UDP 5353, disable \"AP/client isolation\" on the router, or add devices by address."}, others
	}
	return Finding{Check: "self-test", Severity: SeverityOK,
		Message: fmt.Sprintf("Our own test advertisement came back over multicast in %v (this shows multicast works on this device; a firewall may still drop other devices' packets).", took.Round(time.Millisecond))}, others
}
