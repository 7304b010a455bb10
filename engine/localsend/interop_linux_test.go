package localsend

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/lspeer"
	"github.com/ferrydrop/ferry/internal/netns"
)

// The interop suite runs Ferry's side (this package) in one network
// namespace and the independent test peer (internal/lspeer, written from
// the protocol text) in another, joined by a veth pair: multicast flows
// between them on LocalSend's own port and group, and nothing reaches this
// machine's interfaces.

// ferryServer serves a Ferry LocalSend server inside ns at ip:port.
func ferryServer(t *testing.T, ns *netns.NS, ip string, port int, cfg ServerConfig) (*Server, string) {
	t.Helper()
	if len(cfg.Cert.Certificate) == 0 {
		cfg.Cert = testCert(t, 0)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(ip, fmt.Sprint(port))
	ln, err := ns.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() { s.Close(); <-done })
	return s, addr
}

// peerServer serves the test peer inside ns at ip:53317.
func peerServer(t *testing.T, ns *netns.NS, ip string, p *lspeer.Peer) string {
	t.Helper()
	addr := net.JoinHostPort(ip, fmt.Sprint(p.Port))
	ln, err := ns.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() { p.Close(); <-done })
	return addr
}

func newPeer(t *testing.T, ns *netns.NS, alias string) *lspeer.Peer {
	t.Helper()
	p, err := lspeer.New(alias)
	if err != nil {
		t.Fatal(err)
	}
	p.Dial = ns.Dial
	return p
}

func TestInteropPeerSendsToFerry(t *testing.T) {
	a, b, ipA, ipB, _, _ := netns.Pair(t)
	_ = ipB
	rx := newMemReceiver()
	srv, addr := ferryServer(t, a, ipA, DefaultPort, ServerConfig{Info: Info{Alias: "ferry"}, Receiver: rx})
	p := newPeer(t, b, "phone")
	ctx := context.Background()
	fp := srv.Fingerprint()

	t.Run("files with a client certificate", func(t *testing.T) {
		files := []lspeer.SendFile{{Name: "a.txt", Data: []byte("alpha"), WithSHA: true}, {Name: "b.bin", Data: bytes.Repeat([]byte{7}, 300_000)}}
		res, err := p.Send(ctx, addr, fp, true, "", "", files, nil)
		if err != nil || res.PrepareStatus != 200 || res.UploadStatus["a.txt"] != 200 || res.UploadStatus["b.bin"] != 200 {
			t.Fatalf("%+v %v", res, err)
		}
		if err := nextEnd(t, rx); err != nil {
			t.Fatal(err)
		}
		o := rx.lastOffer()
		if !o.Verified() || o.Sender.Alias != "phone" || o.Sender.DeviceModel != "lspeer" || o.Addr.String() != ipB {
			t.Fatalf("offer %+v", o)
		}
		if got := rx.files["b.bin"]; got == nil || got.Len() != 300_000 {
			t.Fatal("b.bin did not arrive whole")
		}
	})
	t.Run("client without a certificate", func(t *testing.T) {
		res, err := p.Send(ctx, addr, fp, false, "", "", []lspeer.SendFile{{Name: "nocert.txt", Data: []byte("x")}}, nil)
		if err != nil || res.UploadStatus["nocert.txt"] != 200 {
			t.Fatalf("%+v %v", res, err)
		}
		nextEnd(t, rx)
		if o := rx.lastOffer(); o.Verified() || o.CertFingerprint != "" {
			t.Fatalf("an unproven fingerprint was taken as verified: %+v", o)
		}
	})
	t.Run("50-file nested folder", func(t *testing.T) {
		var files []lspeer.SendFile
		for i := range 50 {
			files = append(files, lspeer.SendFile{Name: fmt.Sprintf("album/sub%d/deeper/f%02d.txt", i%5, i), Data: []byte(strings.Repeat("z", i+1)), WithSHA: i%2 == 0})
		}
		res, err := p.Send(ctx, addr, fp, true, "", "", files, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if res.UploadStatus[f.Name] != 200 {
				t.Fatalf("%s: %d", f.Name, res.UploadStatus[f.Name])
			}
		}
		nextEnd(t, rx)
		rx.mu.Lock()
		defer rx.mu.Unlock()
		for _, f := range files {
			if got := rx.files[f.Name]; got == nil || !bytes.Equal(got.Bytes(), f.Data) {
				t.Fatalf("%s did not arrive", f.Name)
			}
		}
	})
	t.Run("text", func(t *testing.T) {
		res, err := p.Send(ctx, addr, fp, true, "", "hello from the phone", nil, nil)
		if err != nil || res.PrepareStatus != http.StatusNoContent {
			t.Fatalf("%+v %v", res, err)
		}
		nextEnd(t, rx)
		if o := rx.lastOffer(); !o.IsText || o.Text != "hello from the phone" {
			t.Fatalf("offer %+v", o)
		}
	})
	t.Run("checksum mismatch", func(t *testing.T) {
		res, err := p.Send(ctx, addr, fp, true, "", "", []lspeer.SendFile{{Name: "bad.bin", Data: []byte("bytes"), SHA256: strings.Repeat("ab", 32)}}, nil)
		if err != nil || res.UploadStatus["bad.bin"] != http.StatusUnprocessableEntity {
			t.Fatalf("%+v %v", res, err)
		}
		nextEnd(t, rx)
		rx.mu.Lock()
		defer rx.mu.Unlock()
		if rx.files["bad.bin"] != nil || !errors.Is(rx.aborted["bad.bin"], ErrChecksum) {
			t.Fatal("a file with a wrong checksum was kept")
		}
	})
	t.Run("decline", func(t *testing.T) {
		rx.decide = func(*Offer) ([]string, error) { return nil, ErrDeclined }
		defer func() { rx.decide = nil }()
		res, err := p.Send(ctx, addr, fp, true, "", "", []lspeer.SendFile{{Name: "no.txt", Data: []byte("x")}}, nil)
		if err != nil || res.PrepareStatus != http.StatusForbidden || res.Message == "" {
			t.Fatalf("%+v %v", res, err)
		}
	})
	t.Run("cancel by the sender", func(t *testing.T) {
		res, err := p.Send(ctx, addr, fp, true, "", "", []lspeer.SendFile{{Name: "c.txt", Data: []byte("x")}}, func(sid string) {
			if st, err := p.Cancel(ctx, addr, fp, sid); err != nil || st != 200 {
				t.Errorf("cancel: %d %v", st, err)
			}
		})
		if err != nil || res.UploadStatus["c.txt"] != http.StatusForbidden {
			t.Fatalf("an upload after cancel: %+v %v", res, err)
		}
		if err := nextEnd(t, rx); !errors.Is(err, ErrCancelled) {
			t.Fatalf("end %v", err)
		}
	})
	t.Run("PIN", func(t *testing.T) {
		rxp := newMemReceiver()
		psrv, paddr := ferryServer(t, a, ipA, DefaultPort+1, ServerConfig{Receiver: rxp, PIN: "2468"})
		one := []lspeer.SendFile{{Name: "p.txt", Data: []byte("x")}}
		for _, c := range []struct {
			pin  string
			want int
		}{{"", 401}, {"1111", 401}, {"2468", 200}, {"1", 401}, {"2", 401}, {"3", 401}, {"2468", 429}} {
			res, err := p.Send(ctx, paddr, psrv.Fingerprint(), true, c.pin, "", one, nil)
			if err != nil || res.PrepareStatus != c.want {
				t.Fatalf("PIN %q: %+v %v, want %d", c.pin, res, err, c.want)
			}
			if c.want == 200 {
				nextEnd(t, rxp)
			}
		}
	})
}

func TestInteropFerrySendsToPeer(t *testing.T) {
	a, b, _, ipB, _, _ := netns.Pair(t)
	p := newPeer(t, b, "phone")
	p.RequireClientCert = true // as the 1.18 app does
	addr := peerServer(t, b, ipB, p)
	cl := NewClient(ClientConfig{Info: Info{Alias: "ferry"}, Cert: testCert(t, 1), Dial: a.Dial})
	tg := Target{Addr: addr, Fingerprint: p.Fingerprint}
	ctx := context.Background()

	t.Run("files and a folder", func(t *testing.T) {
		var ups []Upload
		for i := range 20 {
			ups = append(ups, bytesUpload(fmt.Sprint("u", i), fmt.Sprintf("dir/s%d/f%d.bin", i%3, i), bytes.Repeat([]byte{byte(i)}, 10_000+i), i%2 == 0))
		}
		res, err := cl.Send(ctx, tg, ups, SendOptions{})
		if err != nil || len(res.Accepted) != 20 {
			t.Fatalf("%+v %v", res, err)
		}
		got, _, offers, _, _, _ := p.Snapshot()
		for i := range 20 {
			if b := got[fmt.Sprintf("dir/s%d/f%d.bin", i%3, i)]; len(b) != 10_000+i {
				t.Fatalf("file %d: %d bytes", i, len(b))
			}
		}
		info := offers[len(offers)-1]["info"].(map[string]any)
		if info["alias"] != "ferry" || !strings.EqualFold(info["fingerprint"].(string), CertFingerprint(testCert(t, 1))) {
			t.Fatalf("info %v", info)
		}
	})
	t.Run("text", func(t *testing.T) {
		if _, err := cl.Send(ctx, tg, []Upload{TextUpload("m", "hi phone")}, SendOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, texts, _, _, _, _ := p.Snapshot(); len(texts) != 1 || texts[0] != "hi phone" {
			t.Fatalf("texts %v", texts)
		}
	})
	t.Run("without a certificate the receiver refuses", func(t *testing.T) {
		nocert := NewClient(ClientConfig{Dial: a.Dial})
		if _, err := nocert.Send(ctx, tg, []Upload{TextUpload("m", "x")}, SendOptions{}); err == nil {
			t.Fatal("a receiver that requires a client certificate took a client without one")
		}
	})
	t.Run("pinning", func(t *testing.T) {
		_, err := cl.Send(ctx, Target{Addr: addr, Fingerprint: CertFingerprint(testCert(t, 2))}, []Upload{TextUpload("m", "x")}, SendOptions{})
		if !errors.Is(err, ErrFingerprint) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("checksum mismatch", func(t *testing.T) {
		u := bytesUpload("c", "sum.bin", []byte("real"), true)
		u.Open = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("fake")), nil }
		if _, err := cl.Send(ctx, tg, []Upload{u}, SendOptions{}); !errors.Is(err, ErrChecksum) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("cancel from Ferry", func(t *testing.T) {
		sctx, cancel := context.WithCancel(ctx)
		pr, pw := io.Pipe()
		defer pw.Close()
		u := Upload{File: File{ID: "big", FileName: "big.bin", Size: 1 << 30}, Open: func() (io.ReadCloser, error) { return pr, nil }}
		done := make(chan error, 1)
		go func() {
			_, err := cl.Send(sctx, tg, []Upload{u}, SendOptions{Written: func(string, int64) { cancel() }})
			done <- err
		}()
		_, _ = pw.Write(make([]byte, 1<<16))
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		if _, _, _, _, n, _ := p.Snapshot(); n != 1 {
			t.Fatalf("the peer saw %d cancels", n)
		}
	})
	t.Run("PIN asked, wrong then right", func(t *testing.T) {
		pp := newPeer(t, b, "pinned")
		pp.Port, pp.PIN = DefaultPort+1, "4321"
		paddr := peerServer(t, b, ipB, pp)
		var asked []bool
		ask := func(_ context.Context, wrong bool) (string, error) {
			asked = append(asked, wrong)
			if len(asked) == 1 {
				return "0000", nil
			}
			return "4321", nil
		}
		if _, err := cl.Send(ctx, Target{Addr: paddr, Fingerprint: pp.Fingerprint}, []Upload{TextUpload("m", "x")}, SendOptions{AskPIN: ask}); err != nil {
			t.Fatal(err)
		}
		if len(asked) != 2 || asked[0] || !asked[1] {
			t.Fatalf("asked %v", asked)
		}
		for range 3 {
			cl.Send(ctx, Target{Addr: paddr, Fingerprint: pp.Fingerprint}, []Upload{TextUpload("m", "x")}, SendOptions{PIN: "9"})
		}
		if _, err := cl.Send(ctx, Target{Addr: paddr, Fingerprint: pp.Fingerprint}, []Upload{TextUpload("m", "x")}, SendOptions{PIN: "4321"}); !errors.Is(err, ErrTooManyPINs) {
			t.Fatalf("after 3 wrong PINs: %v", err)
		}
	})
	t.Run("decline", func(t *testing.T) {
		p.Decline = true
		defer func() { p.Decline = false }()
		if _, err := cl.Send(ctx, tg, []Upload{TextUpload("m", "x")}, SendOptions{}); !errors.Is(err, ErrDeclined) {
			t.Fatalf("err %v", err)
		}
	})
}

// devices collects what a Discoverer reports.
type devices struct {
	mu  sync.Mutex
	all []Device
	ch  chan struct{}
}

func (d *devices) add(dev Device) {
	d.mu.Lock()
	d.all = append(d.all, dev)
	d.mu.Unlock()
	select {
	case d.ch <- struct{}{}:
	default:
	}
}

// wait returns the first device reported that matches.
func (d *devices) wait(t *testing.T, what string, match func(Device) bool) Device {
	t.Helper()
	deadline := time.After(hangGuard)
	for {
		d.mu.Lock()
		for _, dev := range d.all {
			if match(dev) {
				d.mu.Unlock()
				return dev
			}
		}
		d.mu.Unlock()
		select {
		case <-d.ch:
		case <-deadline:
			t.Fatalf("never saw %s", what)
		}
	}
}

func TestInteropDiscovery(t *testing.T) {
	a, b, ipA, ipB, _, ifB := netns.Pair(t)
	// The peer: a server that answers announcements with a register, and a
	// second one without a server, which answers over UDP.
	p := newPeer(t, b, "phone")
	peerServer(t, b, ipB, p)
	quiet := newPeer(t, b, "old-phone")
	quiet.Port = 1 // no server there
	var pm, qm *lspeer.Multicast
	var err1, err2 error
	b.Do(func() {
		pm, err1 = p.ListenMulticast(ifB, DefaultPort)
		qm, err2 = quiet.ListenMulticast(ifB, DefaultPort)
	})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	pm.AnswerWithRegister = true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(2)
	go func() { defer wg.Done(); pm.Run(ctx) }()
	go func() { defer wg.Done(); qm.Run(ctx) }()

	// Ferry in A: a server, a client and the discoverer wired together.
	seen := &devices{ch: make(chan struct{}, 1)}
	var d *Discoverer
	cl := NewClient(ClientConfig{Info: Info{Alias: "ferry", Port: DefaultPort, Protocol: "https"}, Cert: testCert(t, 0), Dial: a.Dial})
	srv, _ := ferryServer(t, a, ipA, DefaultPort, ServerConfig{Info: Info{Alias: "ferry"}, Receiver: newMemReceiver(), Cert: testCert(t, 0),
		OnRegister: func(in Info, addr netip.Addr, c *x509.Certificate) { d.HandleRegister(in, addr, c) }})
	info := srv.Info()
	info.Port = DefaultPort
	var err error
	a.Do(func() { d, err = NewDiscoverer(DiscoveryConfig{Info: info, Client: cl, OnDevice: seen.add}) })
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); d.Run(ctx) }()

	// Ferry's announcement: the peer answers with a register (pinned to
	// Ferry's fingerprint, with its certificate), the old one over UDP.
	reg := seen.wait(t, "the peer's register answer", func(dv Device) bool { return dv.Via == "register" && dv.Alias == "phone" })
	if !reg.Verified || !SameFingerprint(reg.Fingerprint, p.Fingerprint) || reg.Addr.String() != ipB {
		t.Fatalf("register answer %+v", reg)
	}
	// The key that proved it, for discovery to recognise a device it
	// knows over another protocol.
	if pc, err := x509.ParseCertificate(p.Cert.Certificate[0]); err != nil || reg.KeyHash != sha256.Sum256(pc.RawSubjectPublicKeyInfo) {
		t.Fatalf("register answer's key hash %x (%v)", reg.KeyHash, err)
	}
	old := seen.wait(t, "the old peer's UDP answer", func(dv Device) bool { return dv.Alias == "old-phone" })
	if old.Verified || old.Via != "multicast" {
		t.Fatalf("UDP answer %+v", old)
	}
	// The peer's announcement: Ferry answers with a register pinned to
	// it, presenting its certificate.
	if err := pm.Announce(); err != nil {
		t.Fatal(err)
	}
	seen.wait(t, "the peer's announcement", func(dv Device) bool { return dv.Alias == "phone" && dv.Via == "multicast" })
	for {
		_, _, _, regs, _, _ := p.Snapshot()
		if len(regs) > 0 {
			if !SameFingerprint(regs[0].CertFingerprint, srv.Fingerprint()) || regs[0].Addr != ipA {
				t.Fatalf("Ferry's register %+v", regs[0])
			}
			break
		}
		select {
		case <-seen.ch:
		case <-time.After(hangGuard):
			t.Fatal("Ferry never registered with the announcing peer")
		}
	}
	// An announcer without a server gets Ferry's UDP answer.
	if err := qm.Announce(); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(hangGuard)
	for {
		heard := false
		for _, h := range qm.Heard() {
			if ann, _ := h.Msg["announce"].(bool); !ann && h.From == ipA {
				heard = true
			}
		}
		if heard {
			break
		}
		select {
		case <-deadline:
			t.Fatal("Ferry never answered the serverless announcer over UDP")
		case <-seen.ch:
		case <-time.After(50 * time.Millisecond): // poll the peer's list; not a timing assertion
		}
	}
	v4, _ := d.JoinedInterfaces()
	if len(v4) == 0 {
		t.Fatal("no interface joined")
	}
}
