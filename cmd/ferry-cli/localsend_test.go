package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/discovery"
	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"

	"github.com/ferrydrop/ferry/internal/lspeer"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// TestReceiveServesLocalSend: receive takes a file from the independent
// LocalSend test peer (over loopback, on a free port, announcing nothing).
func TestReceiveServesLocalSend(t *testing.T) {
	r := startReceiver(t, "", "--once", "--accept", "all", "--no-discovery", "--localsend-port", "0")
	re := regexp.MustCompile(`on port (\d+).*fingerprint ([0-9A-F]{64})`)
	var m []string
	for m == nil {
		select {
		case <-r.errOut.changed():
		case code := <-r.exit:
			t.Fatalf("receive exited %d: %s", code, r.errOut)
		}
		m = re.FindStringSubmatch(r.errOut.String())
	}
	p, err := lspeer.New("Phone")
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Send(context.Background(), "127.0.0.1:"+m[1], m[2], true, "", "", []lspeer.SendFile{{Name: "photos/a.jpg", Data: []byte("jpeg bytes"), WithSHA: true}}, nil)
	if err != nil || res.UploadStatus["photos/a.jpg"] != 200 {
		t.Fatalf("%+v %v", res, err)
	}
	if code := r.wait(); code != 0 {
		t.Fatalf("receive exit %d: %s", code, r.errOut)
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "photos", "a.jpg")); err != nil || string(b) != "jpeg bytes" {
		t.Fatalf("received %q %v", b, err)
	}
	if !strings.Contains(r.out.String(), "1 of 1 files verified") {
		t.Fatalf("output: %s", r.out)
	}
}

// TestReceiveTellsLocalSendPINRefusals: an offer refused for its PIN is
// told, in a line and with --json as a localsend_pin event; receive said
// nothing, so the owner never saw someone guessing (the coalescing of
// what follows is the engine's: TestLocalSendPINRefusalsAreTold).
func TestReceiveTellsLocalSendPINRefusals(t *testing.T) {
	for _, c := range []struct {
		json bool
		want string
	}{
		{false, "LocalSend: 127.0.0.1 gave a wrong PIN\n"},
		{true, `"kind":"localsend_pin"`},
	} {
		args := []string{"--accept", "all", "--no-discovery", "--localsend-port", "0", "--localsend-pin", "4821"}
		if c.json {
			args = append(args, "--json")
		}
		r := startReceiver(t, "", args...)
		re := regexp.MustCompile(`on port (\d+).*fingerprint ([0-9A-F]{64})`)
		var m []string
		for m == nil {
			select {
			case <-r.errOut.changed():
			case code := <-r.exit:
				t.Fatalf("receive exited %d: %s", code, r.errOut)
			}
			m = re.FindStringSubmatch(r.errOut.String())
		}
		p, err := lspeer.New("Phone")
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Send(context.Background(), "127.0.0.1:"+m[1], m[2], true, "0000", "", []lspeer.SendFile{{Name: "a.txt", Data: []byte("a")}}, nil)
		if err != nil || res.PrepareStatus != 401 {
			t.Fatalf("%+v %v", res, err)
		}
		for !strings.Contains(r.out.String(), c.want) {
			select {
			case <-r.out.changed():
			case code := <-r.exit:
				t.Fatalf("receive exited %d: %s", code, r.errOut)
			}
		}
		if c.json && !strings.Contains(r.out.String(), `"pin":{"wrong":1,`) {
			t.Errorf("--json: %s", r.out)
		}
		r.stop()
	}
}

// TestPINLine: what a localsend_pin event says, by what it counts.
func TestPINLine(t *testing.T) {
	since := time.Date(2030, 1, 1, 14, 2, 11, 0, time.Local)
	for _, c := range []struct {
		addr string
		n    engine.PINRefusals
		want string
	}{
		{"192.168.1.5", engine.PINRefusals{Wrong: 1}, "LocalSend: 192.168.1.5 gave a wrong PIN"},
		{"192.168.1.5", engine.PINRefusals{Missing: 1}, "LocalSend: 192.168.1.5 sent an offer without the PIN (its app asks for it)"},
		{"192.168.1.5", engine.PINRefusals{Wrong: 3, Locked: 12, Since: since},
			"LocalSend: 192.168.1.5 gave 3 wrong PINs and was turned away 12 times (3 wrong PINs lock an address out for 5 minutes) since 14:02:11"},
		{"192.168.1.5", engine.PINRefusals{Wrong: 2, Missing: 2, Locked: 1, Since: since},
			"LocalSend: 192.168.1.5 gave 2 wrong PINs, sent 2 offers without the PIN and was turned away once (3 wrong PINs lock an address out for 5 minutes) since 14:02:11"},
		{"", engine.PINRefusals{Wrong: 500, Since: since}, "LocalSend: devices at other addresses gave 500 wrong PINs since 14:02:11"},
	} {
		ev := engine.Event{Kind: engine.EventLocalSendPIN, Peer: engine.PeerInfo{Addr: c.addr}, PIN: &c.n}
		if got := pinLine(ev); got != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.n, got, c.want)
		}
	}
}

// TestSendToLocalSendPINRefusalNamesTheReceiver: a LocalSend receiver that
// asks for a PIN nobody gives, or refuses the one given, is named in the
// failure ("Phone refused the PIN: it was wrong."); with no
// PIN it was most often "Declined by the other device": its name was not
// waited for, as the refusal was taken for no answer.
func TestSendToLocalSendPINRefusalNamesTheReceiver(t *testing.T) {
	p, err := lspeer.New("Phone")
	if err != nil {
		t.Fatal(err)
	}
	p.PIN = "4821"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(p.Close)
	a := writeFile(t, "a.txt", "alpha")
	for _, c := range []struct {
		pin  []string
		want string
	}{
		{nil, "declined: Phone asks for a PIN: ask its owner for it and send again with it."},
		{[]string{"--localsend-pin", "0000"}, "declined: Phone refused the PIN: it was wrong."},
	} {
		args := append([]string{"send", "--config", t.TempDir(), "--protocol", "localsend", "--localsend-fingerprint", p.Fingerprint,
			"--to", ln.Addr().String()}, c.pin...)
		code, stdout, stderr := runCLI(t, append(args, a)...)
		if code != 1 || !strings.Contains(stdout, c.want) {
			t.Errorf("PIN %v: exit %d, %q (%q); want 1, %q", c.pin, code, stdout, stderr, c.want)
		}
	}
}

// cutListener closes its connections once after bytes were read from
// them all together, and then calls cut (in a goroutine): a receiver that
// vanishes mid-file.
type cutListener struct {
	net.Listener
	after int64
	cut   func()
	read  atomic.Int64
	once  sync.Once
}

func (l *cutListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: c, l: l}, nil
}

type cutConn struct {
	net.Conn
	l *cutListener
}

func (c *cutConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.l.read.Add(int64(n)) > c.l.after {
		c.l.once.Do(func() { go c.l.cut() })
		c.Conn.Close()
	}
	return n, err
}

// TestSendToLocalSendReceiverGone: a LocalSend receiver that is not there,
// or vanishes mid-file, is said in a sentence with its name, its address
// and the plain cause ("could not connect to Phone at 127.0.0.1:40123 (is
// LocalSend open there, and receiving?): connect: connection refused"); it
// was the request's Go error, 'Localsend prepare-upload: dial tcp
// 127.0.0.1:40123: connect: connection refused.'
func TestSendToLocalSendReceiverGone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := ln.Addr().String()
	ln.Close()
	a := writeFile(t, "a.txt", "alpha")
	code, stdout, _ := runCLI(t, "send", "--config", t.TempDir(), "--protocol", "localsend", "--retry-for", "0", "--to", nobody, a)
	want := "failed: Could not connect to the receiver at " + nobody + " (is LocalSend open there, and receiving?): connect: connection refused."
	if code != 1 || !strings.Contains(stdout, want) {
		t.Errorf("nobody there: exit %d, %q; want 1, %q", code, stdout, want)
	}

	p, err := lspeer.New("Phone")
	if err != nil {
		t.Fatal(err)
	}
	if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	// Its name comes after the files began (a slow answer to info, as
	// under load): the sentences name it all the same.
	p.InfoDelay = 300 * time.Millisecond
	go p.Serve(&cutListener{Listener: ln, after: 1 << 20, cut: p.Close})
	t.Cleanup(p.Close)
	big := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(big, make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = runCLI(t, "send", "--config", t.TempDir(), "--protocol", "localsend", "--localsend-fingerprint", p.Fingerprint,
		"--retry-for", "1s", "--to", ln.Addr().String(), big)
	// The last attempt's reason ends the line that gives up ("Gave up
	// after 2 attempts in 1s: could not connect ..."), or a retry's.
	for _, want := range []string{"The connection to Phone was lost", "ould not connect to Phone at " + ln.Addr().String() + " (is LocalSend open there, and receiving?): connect: connection refused."} {
		if code != 1 || !strings.Contains(stdout, want) {
			t.Errorf("gone mid-file: exit %d, %q; want 1, %q", code, stdout, want)
		}
	}
}

// TestSendToLocalSendTellsWhatWasLeftOut: a LocalSend receiver that takes
// only some of the files (its user unticked one) ends the send with the
// file named and a non-zero exit, not "1 of 1 files verified"; the summary
// names what carried the files.
func TestSendToLocalSendTellsWhatWasLeftOut(t *testing.T) {
	p, err := lspeer.New("Phone")
	if err != nil {
		t.Fatal(err)
	}
	p.Skip = func(name string) bool { return name == "b.txt" }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(p.Close)
	a := writeFile(t, "a.txt", "alpha")
	b := writeFile(t, "b.txt", "beta")
	code, stdout, stderr := runCLI(t, "send", "--config", t.TempDir(), "--protocol", "localsend",
		"--localsend-fingerprint", p.Fingerprint, "--to", ln.Addr().String(), a, b)
	if code != 1 || !strings.Contains(stderr, "did not take 1 file(s)") {
		t.Fatalf("exit %d, stderr %q; want 1, saying a file was not taken", code, stderr)
	}
	for _, want := range []string{"FAILED  b.txt: Phone did not take this file.", "done: 1 of 1 files verified", "over https", "refused: 1 file(s)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if got, _, _, _, _, _ := p.Snapshot(); string(got["a.txt"]) != "alpha" || got["b.txt"] != nil {
		t.Fatalf("the peer got %d files", len(got))
	}
}

// The names among several --to of send --protocol localsend are looked up
// at once, in one call (one discovery window), not one after another (each
// name nobody answered to cost a window of its own); addresses are not
// looked up, and each --to keeps its own result, in the order given.
func TestLocalSendNamesResolveAtOnce(t *testing.T) {
	tos := []string{"Pixel", "127.0.0.1:53317", "Nobody", "Ferry Laptop", "10.0.0.2"}
	var calls [][]string
	lsPeer := discovery.Peer{LocalSend: &discovery.LocalSend{Alias: "Pixel", Addr: addr.NewLocalSend("https", "192.0.2.7:53317", "")}}
	targets, errs := localSendTargetsOf(tos, "", func(names []string) ([]discovery.Peer, []error) {
		calls = append(calls, names)
		return []discovery.Peer{lsPeer, {}, {ID: "ferry"}}, []error{nil, errors.New("no device called \"Nobody\""), nil}
	})
	if len(calls) != 1 || strings.Join(calls[0], "|") != "Pixel|Nobody|Ferry Laptop" {
		t.Fatalf("lookups %q, want one of Pixel, Nobody, Ferry Laptop", calls)
	}
	if errs[0] != nil || targets[0].Addr != "192.0.2.7:53317" {
		t.Errorf("Pixel: %+v, %v", targets[0], errs[0])
	}
	if errs[1] != nil || targets[1].Addr != "127.0.0.1:53317" || errs[4] != nil || targets[4].Addr != "10.0.0.2:53317" {
		t.Errorf("addresses: %+v %v, %+v %v", targets[1], errs[1], targets[4], errs[4])
	}
	if errs[2] == nil || !strings.Contains(errs[2].Error(), "Nobody") {
		t.Errorf("Nobody: %v", errs[2])
	}
	if errs[3] == nil || !strings.Contains(errs[3].Error(), "not as a LocalSend device") {
		t.Errorf("Ferry Laptop: %v", errs[3])
	}
}

// A receiver listening on loopback alone announces itself to no LocalSend
// device, which would come to its network addresses where nothing listens,
// and says so; one listening on a network address announces itself only
// from the interfaces that hold it.
func TestLoopbackReceiverIsNotAnnouncedToLocalSend(t *testing.T) {
	r := startReceiver(t, "", "--localsend-port", "0") // --listen 127.0.0.1:0, discovery on
	want := "not announced to LocalSend devices, which could not reach 127.0.0.1"
	testutil.WaitFor(t, "the receiver's word on LocalSend", func() bool { return strings.Contains(r.errOut.String(), want) })
	if strings.Contains(r.errOut.String(), "will not see this one announced") {
		t.Errorf("it tried to announce: %q", r.errOut)
	}
	eth0 := net.Interface{Index: 2, Name: "eth0"}
	wlan0 := net.Interface{Index: 3, Name: "wlan0"}
	lo := net.Interface{Index: 1, Name: "lo"}
	addrs := map[string][]net.Addr{
		"eth0":  {cidr(t, "192.0.2.2/24"), cidr(t, "fd00::2/64"), cidr(t, "fe80::fc:ff:fe00:1/64")},
		"wlan0": {cidr(t, "10.1.2.3/16")},
		"lo":    {cidr(t, "127.0.0.1/8"), cidr(t, "::1/128")},
	}
	ifs := []net.Interface{lo, eth0, wlan0}
	for _, h := range []struct {
		host string
		want []string
	}{
		{"192.0.2.2", []string{"eth0"}},
		{"10.1.2.3", []string{"wlan0"}},
		{"fd00::2", []string{"eth0"}},
		{"fe80::fc:ff:fe00:1%eth0", []string{"eth0"}},
		{"::ffff:10.1.2.3", []string{"wlan0"}},
		{"127.0.0.1", nil}, {"::1", nil}, {"127.0.0.2", nil},
		{"192.0.2.9", nil}, // held by no interface
		{"pc.local", nil},  // a name
	} {
		got := holding(h.host, ifs, func(i net.Interface) []net.Addr { return addrs[i.Name] })
		var names []string
		for _, i := range got {
			names = append(names, i.Name)
		}
		if !slices.Equal(names, h.want) {
			t.Errorf("holding(%q) = %v, want %v", h.host, names, h.want)
		}
	}
	for _, h := range []struct {
		host string
		want bool
	}{{"", true}, {"::", true}, {"0.0.0.0", true}, {"127.0.0.1", false}, {"192.168.1.5", false}, {"pc.local", false}} {
		if got := everyAddress(h.host); got != h.want {
			t.Errorf("everyAddress(%q) = %v", h.host, got)
		}
	}
}

func cidr(t *testing.T, s string) net.Addr {
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return &net.IPNet{IP: ip, Mask: n.Mask}
}
