package hostile_test

import (
	"context"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine"
	"github.com/ferrydrop/ferry/engine/addr"
	"github.com/ferrydrop/ferry/engine/hostile"
	"github.com/ferrydrop/ferry/engine/wire"
)

// The hostile peer speaks the real protocol over both transports, and its
// floods run until their context ends.
func TestHostilePeerAgainstAnEngine(t *testing.T) {
	e, err := engine.New(engine.Options{ConfigDir: t.TempDir(), DownloadDir: t.TempDir(), Listen: "127.0.0.1:0", Accept: engine.AcceptAll})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	p := hostile.Peer{Dir: t.TempDir()}
	for _, a := range e.Addrs() {
		kind, hp := string(a.Kind), a.HostPort()
		s, err := p.Connect(t.Context(), kind, hp, "mallory")
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if err := s.Offer([]wire.FileEntry{{Path: "a.txt", Size: 1}}, 1<<20); err != nil {
			t.Fatal(err)
		}
		d, err := s.Decision(t.Context())
		if err != nil || !d.Accept {
			t.Fatalf("%s: decision %+v, %v", kind, d, err)
		}
		s.Close()
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	var st hostile.Stats
	tcpAt, _ := addr.First(e.Addrs(), addr.TCP)
	p.FloodIdleTCP(ctx, tcpAt.HostPort(), 4, &st)
	if st.Opened.Load()+st.Failed.Load() == 0 {
		t.Fatal("the flood did nothing")
	}
}
