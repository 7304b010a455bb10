package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/internal/netlab"
)

// TestPackedOverASlowLink: over a 40 Mbit/s LAN (the lab's shared link,
// each side in a network namespace), ferry-cli send with its defaults
// compresses source code on the way (the link is what it waits on) and
// says so, and the files arrive exact; photos (random bytes) travel as
// they are. Over loopback it compresses nothing (TestChunksTravelPacked
// covers the wire; the gate's judgement is pack.TestGate's).
func TestPackedOverASlowLink(t *testing.T) {
	lab := natLab(t, netlab.NATConfig{Impaired: true, SharedLAN: true})
	if err := lab.SetImpairment(netlab.NATLinkShared, netlab.Impairment{Delay: time.Millisecond, Rate: 40e6}); err != nil {
		t.Fatal(err)
	}
	bin := buildCLI(t)
	src := filepath.Join(t.TempDir(), "Tree")
	code, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "net", "http", "server.go"))
	if err != nil {
		t.Fatal(err)
	}
	var text []byte
	for len(text) < 12<<20 {
		text = append(text, code...)
	}
	write := func(name string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(src, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("server.go.txt", text)
	for i := range 40 {
		write(filepath.Join("pkg", "f"+string(rune('a'+i%26))+string(rune('a'+i/26))+".go"), code[i*1000:i*1000+20000])
	}
	photo, err := os.ReadFile(randomFile(t, 4))
	if err != nil {
		t.Fatal(err)
	}
	write("photo.jpg", photo)
	inbox := t.TempDir()
	startIn(t, lab, netlab.HostB, bin, "listening", "receive", "--config", t.TempDir(), "--dir", inbox,
		"--listen", "10.99.0.2:47800", "--accept", "all", "--no-discovery", "--localsend=false")
	out, err := runIn(t, lab, netlab.HostA, bin, "send", "--config", t.TempDir(), "--to", "10.99.0.2:47800", src)
	if err != nil {
		t.Fatalf("send: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(out))
	if !strings.Contains(out, "travelled compressed") {
		t.Errorf("the send says nothing of compression:\n%s", out)
	}
	err = filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Dir(src), p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(inbox, rel))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %d bytes arrived (%v), want %d", rel, len(got), err, len(want))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
