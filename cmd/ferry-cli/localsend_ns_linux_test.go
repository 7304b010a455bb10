package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/localsend"
	"github.com/ferrydrop/ferry/internal/lspeer"
	"github.com/ferrydrop/ferry/internal/netns"
)

// TestNamespacesLocalSendDevice: a device that speaks only LocalSend (the
// independent test peer, answering announcements with a register as the
// official app 1.18 does) is listed by peers from the discovery table and
// sent to by name, with no --protocol: send picks the protocol it speaks.
// Before it joins the multicast group, only --localsend-scan (the /24
// register scan of B's own network, run inside namespace B) finds it.
func TestNamespacesLocalSendDevice(t *testing.T) {
	a, b, ipA, _, ifA, _ := netns.Pair(t)
	bin := buildCLI(t)
	p, err := lspeer.New("Phone")
	if err != nil {
		t.Fatal(err)
	}
	p.Dial = a.Dial
	ln, err := a.Listen("tcp", net.JoinHostPort(ipA, strconv.Itoa(localsend.DefaultPort)))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	defer func() { p.Close(); <-served }()
	inB := func(args ...string) (string, string, error) {
		cmd := exec.Command("ip", append([]string{"netns", "exec", b.Name, bin}, args...)...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		return o.String(), e.String(), err
	}
	// Without multicast the phone is invisible, unless the /24 register
	// scan is asked for.
	wantPhone := func(out, errOut string) {
		t.Helper()
		var ls lsPeer
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &ls); err != nil || ls.Protocol != engine.ProtocolLocalSend || ls.Alias != "Phone" ||
			ls.Address != net.JoinHostPort(ipA, strconv.Itoa(localsend.DefaultPort)) || !ls.Verified || !strings.EqualFold(ls.Fingerprint, p.Fingerprint) {
			t.Fatalf("peers: %q %v (stderr %s)", out, err, errOut)
		}
	}
	out, errOut, err := inB("peers", "--config", t.TempDir(), "--json", "--timeout", "1s")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("peers without multicast or scan: %q %v %s", out, err, errOut)
	}
	out, errOut, err = inB("peers", "--config", t.TempDir(), "--json", "--timeout", "3s", "--localsend-scan")
	if err != nil {
		t.Fatalf("peers --localsend-scan: %v %s", err, errOut)
	}
	wantPhone(out, errOut)

	// With multicast (answered with a register, as the app 1.18 does).
	var m *lspeer.Multicast
	a.Do(func() { m, err = p.ListenMulticast(ifA, localsend.DefaultPort) })
	if err != nil {
		t.Fatal(err)
	}
	m.AnswerWithRegister = true
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); m.Run(ctx) }()
	defer func() { cancel(); <-ran }()

	out, errOut, err = inB("peers", "--config", t.TempDir(), "--json", "--timeout", "2s")
	if err != nil {
		t.Fatalf("peers: %v %s", err, errOut)
	}
	wantPhone(out, errOut)

	src := writeFile(t, "to-the-phone.txt", "found by name\n")
	out, errOut, err = inB("send", "--config", t.TempDir(), "--to", "phone", "--json", src)
	if err != nil {
		t.Fatalf("send by name: %v %s %s", err, out, errOut)
	}
	if ev := lastEvent(t, out); ev.Result == nil || ev.Result.State != engine.StateDone || ev.Peer.Protocol != engine.ProtocolLocalSend {
		t.Fatalf("send by name: %+v", ev)
	}
	got, _, _, _, _, _ := p.Snapshot()
	if string(got["to-the-phone.txt"]) != "found by name\n" {
		t.Fatalf("the phone received %q", got)
	}
}
