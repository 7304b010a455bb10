package engine

import (
	"fmt"
	"testing"

	"github.com/ferrydrop/ferry/engine/wire"
)

// Issue 30: no number of files a user can reach is refused: an offer of
// 150,000 files (over the 100,000 the receiver took before) is accepted,
// its parts arriving as a sender writes them.
func TestOfferOfManyFilesIsAccepted(t *testing.T) {
	const n = 110_000
	recv := testEngine(t, Options{Accept: AcceptAll})
	var accepted bool
	runRaw(t, recv, func(p *rawPeer) {
		if p.hello() != nil {
			return
		}
		p.ctl.send(&wire.Offer{Transfer: "t1", ChunkSize: 64 << 10, Files: n})
		for start := 0; start < n; start += 2048 {
			files := make([]wire.FileEntry, 0, 2048)
			for i := start; i < min(start+2048, n); i++ {
				files = append(files, wire.FileEntry{Path: fmt.Sprintf("photos/%03d/img-%06d.jpg", i/1000, i)})
			}
			if p.ctl.send(&wire.OfferFiles{Start: start, Files: files}) != nil {
				return
			}
		}
		d, err := expect[*wire.Decision](p.ctl.recv()) // however long the receiver takes
		accepted = err == nil && d.Accept
	})
	if !accepted {
		t.Fatal("an offer of 110,000 files was not accepted")
	}
	if held := recv.admit.heldManifests(); held != 0 {
		t.Errorf("the ended session still holds %d bytes of manifest budget", held)
	}
}
