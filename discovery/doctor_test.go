package discovery

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func findingFor(r []Finding, check string) (Finding, bool) {
	for _, f := range r {
		if f.Check == check {
			return f, true
		}
	}
	return Finding{}, false
}

func TestCheckInterfaces(t *testing.T) {
	lo := InterfaceInfo{Name: "lo", Up: true, Flags: net.FlagUp | net.FlagLoopback}
	eth := InterfaceInfo{Name: "eth0", Up: true, Flags: net.FlagUp | net.FlagMulticast,
		Addrs: []netip.Prefix{netip.MustParsePrefix("192.168.1.2/24")}}
	eth6 := InterfaceInfo{Name: "eth1", Up: true, Flags: net.FlagUp | net.FlagMulticast,
		Addrs: []netip.Prefix{netip.MustParsePrefix("fe80::1/64")}}
	noMC := InterfaceInfo{Name: "eth2", Up: true, Flags: net.FlagUp}
	wg := InterfaceInfo{Name: "wg0", Up: true, Flags: net.FlagUp | net.FlagPointToPoint}
	down := InterfaceInfo{Name: "eth3", Flags: net.FlagMulticast}
	for _, tc := range []struct {
		name   string
		ifaces []InterfaceInfo
		want   map[string]Severity // check -> severity
	}{
		{"nothing", nil, map[string]Severity{"interfaces": SeverityError}},
		{"only loopback", []InterfaceInfo{lo, down}, map[string]Severity{"interfaces": SeverityError}},
		{"no multicast", []InterfaceInfo{lo, noMC}, map[string]Severity{"interfaces": SeverityError}},
		{"fine", []InterfaceInfo{lo, eth}, map[string]Severity{"interfaces": SeverityOK}},
		{"ipv6 only", []InterfaceInfo{lo, eth6}, map[string]Severity{"interfaces": SeverityOK}},
		{"vpn", []InterfaceInfo{lo, eth, wg}, map[string]Severity{"interfaces": SeverityOK, "vpn": SeverityWarning}},
		{"vpn by name", []InterfaceInfo{eth, {Name: "tun0", Up: true, Flags: net.FlagUp}}, map[string]Severity{"vpn": SeverityWarning}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkInterfaces(tc.ifaces)
			for check, sev := range tc.want {
				f, ok := findingFor(got, check)
				if !ok || f.Severity != sev {
					t.Errorf("%s: got %+v, want severity %s", check, got, sev)
				}
				if f.Message == "" || (sev != SeverityOK && f.Fix == "") {
					t.Errorf("%s: finding lacks message or fix: %+v", check, f)
				}
			}
			if _, ok := findingFor(got, "vpn"); ok && tc.want["vpn"] == "" {
				t.Errorf("unexpected VPN finding: %+v", got)
			}
		})
	}
}

func TestCheckFirewall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules string
		want  Severity
	}{
		{"empty", "", SeverityOK},
		{"iptables accept all", "*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n", SeverityOK},
		{"iptables drops 5353", "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -p udp -m udp --dport 5353 -j DROP\nCOMMIT\n", SeverityWarning},
		{"iptables policy drop", "*filter\n:INPUT DROP [0:0]\n-A INPUT -i lo -j ACCEPT\nCOMMIT\n", SeverityWarning},
		{"iptables policy drop, mdns and ours allowed", "*filter\n:INPUT DROP [0:0]\n-A INPUT -p udp --dport 5353 -j ACCEPT\n-A INPUT -p udp --dport 4242 -j ACCEPT\nCOMMIT\n", SeverityOK},
		{"iptables catch-all drop", "*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -j DROP\nCOMMIT\n", SeverityWarning},
		{"other port number containing 5353", "*filter\n-A INPUT -p udp --dport 15353 -j DROP\n", SeverityOK},
		{"output chain irrelevant", "*filter\n-A OUTPUT -p udp --dport 5353 -j DROP\n", SeverityOK},
		{"nft policy drop", "table inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n\t\tct state established accept\n\t}\n}\n", SeverityWarning},
		{"nft policy drop with mdns", "table inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n\t\tudp dport 5353 accept\n\t\tudp dport 4242 accept\n\t}\n}\n", SeverityOK},
		{"nft drop mdns", "table inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter; policy accept;\n\t\tudp dport 5353 drop\n\t}\n}\n", SeverityWarning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkFirewall(tc.rules, []int{4242})
			worst := Report{Findings: got}.Worst()
			if worst != tc.want {
				t.Fatalf("worst = %s, want %s: %+v", worst, tc.want, got)
			}
		})
	}
}

func TestDiagnoseWithoutNetwork(t *testing.T) {
	r := Diagnose(context.Background(), DiagnoseOptions{
		Interfaces: func() ([]InterfaceInfo, error) {
			return []InterfaceInfo{{Name: "lo", Up: true, Flags: net.FlagUp | net.FlagLoopback}}, nil
		},
		FirewallRules: func(context.Context) (string, error) { return "", errors.New("permission denied") },
	})
	if r.Worst() != SeverityError {
		t.Fatalf("worst %s: %+v", r.Worst(), r.Findings)
	}
	if f, ok := findingFor(r.Findings, "firewall"); !ok || f.Severity != SeverityInfo {
		t.Fatalf("unreadable firewall not reported: %+v", r.Findings)
	}
	if _, ok := findingFor(r.Findings, "self-test"); ok {
		t.Fatal("self-test ran without a usable interface")
	}
}

// TestDoctorInNamespaces runs the real Diagnose (sockets, firewall,
// self-test) inside namespaces: one with nothing but loopback, one with a
// working veth, and one whose firewall drops mDNS.
func TestDoctorInNamespaces(t *testing.T) {
	requireRootAndIP(t)
	nsA, nsB, _, _ := vethPair(t)
	report := func(ns string) Report {
		t.Helper()
		h := startHelper(t, ns, "doctor", helperModeEnv+"=doctor")
		l := h.waitFor(t, "report", 20*time.Second, func(l helperLine) bool { return l.Ev == "report" })
		return *l.Report
	}
	severities := func(r Report) map[string]Severity {
		m := map[string]Severity{}
		for _, f := range r.Findings {
			if f.Severity.rank() >= m[f.Check].rank() {
				m[f.Check] = f.Severity
			}
		}
		return m
	}

	// Only loopback.
	run(t, "ip", "netns", "add", nsA+"lo")
	t.Cleanup(func() { exec.Command("ip", "netns", "del", nsA+"lo").Run() })
	r := report(nsA + "lo")
	if s := severities(r); s["interfaces"] != SeverityError || s["self-test"] != "" {
		t.Fatalf("loopback-only namespace: %+v", r.Findings)
	}

	// A working link: the self-test sees its own advertisement.
	r = report(nsA)
	if s := severities(r); s["interfaces"] != SeverityOK || s["mdns-socket"] != SeverityOK || s["self-test"] != SeverityOK {
		t.Fatalf("working namespace: %+v", r.Findings)
	}

	// mDNS dropped by the namespace's own firewall.
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("skipping the firewall case: iptables is not installed")
	}
	run(t, "ip", "netns", "exec", nsB, "iptables", "-A", "INPUT", "-p", "udp", "--dport", "5353", "-j", "DROP")
	r = report(nsB)
	s := severities(r)
	// Our own looped-back multicast is not filtered by INPUT rules here, so
	// only the firewall check can tell.
	if s["firewall"] != SeverityWarning || r.Worst() != SeverityWarning {
		t.Fatalf("firewalled namespace: %+v", r.Findings)
	}
	if !slices.ContainsFunc(r.Interfaces, func(i InterfaceInfo) bool { return i.Multicast() }) {
		t.Fatalf("interfaces not reported: %+v", r.Interfaces)
	}
}
