package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/wire"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// spilledDisk is the disk the offers' lists take now, in all.
func spilledDisk(e *Engine) int64 {
	_, all := e.lists.budget.Used("")
	return all
}

// noSpill waits until nothing of the offers' lists is left: no file in
// the spill folder, no disk charged.
func noSpill(t *testing.T, e *Engine) {
	t.Helper()
	testutil.WaitFor(t, "the offers' lists to be removed", func() bool {
		ents, _ := os.ReadDir(e.lists.dir)
		return len(ents) == 0 && spilledDisk(e) == 0
	})
}

// names makes n manifest entries with names of about 40 bytes, from
// index start on.
func names(start, n int) []wire.FileEntry {
	out := make([]wire.FileEntry, 0, n)
	for i := start; i < start+n; i++ {
		out = append(out, wire.FileEntry{Path: fmt.Sprintf("photos/%03d/img-%06d-some-longer-name.jpg", i/100, i)})
	}
	return out
}

// Issue 30: an offer larger than the part of its list kept in memory is
// read back from disk exact: every file arrives with its bytes, and the
// list's spill file is gone afterwards.
func TestSpilledOfferArrivesExact(t *testing.T) {
	recv := startReceiver(t, Options{})
	recv.lists.memory = 2 << 10 // about 30 entries in memory, the rest on disk
	send := testEngine(t, Options{})
	src := filepath.Join(t.TempDir(), "tree")
	const n = 300
	for i := range n {
		writeFile(t, filepath.Join(src, fmt.Sprintf("d%d/sub%d/file-%03d.bin", i%7, i%3, i)), i*37%5000)
	}
	res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: "tcp"})
	if res.State != StateDone || res.Verified != n {
		t.Fatalf("result %+v", res)
	}
	if got := sameTree(t, src, recv.DownloadDir()); got != n {
		t.Errorf("%d files compared, want %d", got, n)
	}
	noPartials(t, recv.DownloadDir())
	noSpill(t, recv)
}

// The spill file is removed, and its disk given back, however the session
// ends: refused over the disk budget (with the figure), failed after the
// offer was accepted, or cut off in the middle of its manifest; and while
// it exists it has no name on disk, so a process that dies leaves nothing.
func TestOfferListIsRemoved(t *testing.T) {
	cases := []struct {
		name   string
		script func(t *testing.T, recv *Engine, p *rawPeer)
		want   string // in the receiver's result
	}{
		{"refused over the disk budget", func(t *testing.T, recv *Engine, p *rawPeer) {
			p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: 400})
			p.ctl.send(&wire.OfferFiles{Start: 0, Files: names(0, 400)}) // about 18 KB spilled
			d, err := expect[*wire.Decision](p.ctl.recvTimeout(5 * time.Second))
			if err != nil || d.Accept || d.Code != wire.CodeTooLarge {
				t.Errorf("decision %+v, %v", d, err)
			}
			p.conn.Close(nil) // as a sender does once told
		}, "keeps file lists of at most 8 KB on its disk for one network address"},
		{"failed after it was accepted", func(t *testing.T, recv *Engine, p *rawPeer) {
			p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: 100})
			p.ctl.send(&wire.OfferFiles{Start: 0, Files: names(0, 100)})
			if !p.waitAccepted() {
				t.Error("not accepted")
			}
			if spilledDisk(recv) == 0 {
				t.Error("the list did not spill")
			}
			p.conn.Close(nil) // the sender vanishes
		}, "closed pipe"}, // the connection's end, as the test's pipe says it
		{"cut off in the middle of its manifest (a crash)", func(t *testing.T, recv *Engine, p *rawPeer) {
			p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: 200})
			p.ctl.send(&wire.OfferFiles{Start: 0, Files: names(0, 100)})
			testutil.WaitFor(t, "the list to spill", func() bool { return spilledDisk(recv) > 0 })
			if ents, _ := os.ReadDir(recv.lists.dir); len(ents) != 0 {
				t.Errorf("the spill file has a name on disk while it is written: %v", ents)
			}
			p.conn.Close(nil)
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recv := testEngine(t, Options{Accept: AcceptAll, ManifestDisk: 8 << 10})
			recv.lists.memory = 1 << 10
			results := receivedResults(t, recv, 4)
			runRaw(t, recv, func(p *rawPeer) {
				if p.hello() == nil {
					c.script(t, recv, p)
				}
			})
			if c.want != "" {
				ev := nextEvent(t, results)
				if ev.Result == nil || ev.Result.State == StateDone || !strings.Contains(ev.Result.Err, c.want) {
					t.Errorf("result %+v, want a failure mentioning %q", ev.Result, c.want)
				}
			}
			noSpill(t, recv)
		})
	}
}

// The disk budget of all addresses together: offers from three addresses,
// each within its own budget, and the third finds the budget in all taken
// by the two others (still sending their manifests): refused as busy.
func TestOfferListsShareTheDiskBudget(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAll, ManifestDisk: 12 << 10}) // 24 KiB in all
	recv.lists.memory = 1 << 10
	hold := func(addr string) (*rawPeer, <-chan struct{}) {
		p, done := connectRawAs(t, recv, newIdentity(t), addr)
		if err := p.hello(); err != nil {
			t.Fatal(err)
		}
		p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: 1000})
		p.ctl.send(&wire.OfferFiles{Start: 0, Files: names(0, 220)}) // about 10 KB spilled
		return p, done
	}
	a, aDone := hold("192.0.2.1:1")
	b, bDone := hold("198.51.100.7:1")
	testutil.WaitFor(t, "two lists to spill", func() bool { return spilledDisk(recv) > 16<<10 })
	c, cDone := connectRawAs(t, recv, newIdentity(t), "203.0.113.9:1")
	if err := c.hello(); err != nil {
		t.Fatal(err)
	}
	c.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: 1000})
	c.ctl.send(&wire.OfferFiles{Start: 0, Files: names(0, 220)})
	d, err := expect[*wire.Decision](c.ctl.recvTimeout(5 * time.Second))
	if err != nil || d.Accept || d.Code != wire.CodeBusy {
		t.Errorf("the third address's offer: %+v, %v; want refused as busy", d, err)
	}
	for _, p := range []*rawPeer{a, b, c} {
		p.conn.Close(nil)
	}
	<-aDone
	<-bDone
	<-cDone
	noSpill(t, recv)
}

// A spill file left by a process that could not unlink it while open (a
// system that refuses to) is removed when the next engine starts.
func TestStaleOfferListIsRemovedAtStart(t *testing.T) {
	cfg := t.TempDir()
	dir := filepath.Join(cfg, "offers")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "manifest-123.spill")
	if err := os.WriteFile(stale, []byte("left over"), 0o600); err != nil {
		t.Fatal(err)
	}
	testEngine(t, Options{ConfigDir: cfg})
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale spill file is still there: %v", err)
	}
}

// The default budgets take an offer of the protocol's million files: the
// count is charged (32 bytes a file, 32 MB) and the parts go on being read,
// where the 1 KiB a file charged before refused anything over about
// 125,000 files.
func TestDefaultBudgetsTakeAMillionFiles(t *testing.T) {
	recv := testEngine(t, Options{Accept: AcceptAll})
	p, done := connectRaw(t, recv)
	if err := p.hello(); err != nil {
		t.Fatal(err)
	}
	p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: wire.MaxFiles})
	p.ctl.send(&wire.OfferFiles{Start: 0, Files: names(0, 2048)})
	count := core.ManifestCost(wire.MaxFiles, 0)
	testutil.WaitFor(t, "the first part to be charged", func() bool { return recv.admit.HeldManifests() > count })
	if held := recv.admit.HeldManifests(); held > core.DefaultManifestBudget/2 {
		t.Errorf("a million files hold %d bytes of the %d budget", held, core.DefaultManifestBudget)
	}
	p.conn.Close(nil)
	<-done
	noSpill(t, recv)
}
