package engine

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/engine/wire"
)

// bytesStream is a Stream over fixed input (writes vanish).
type bytesStream struct{ *bytes.Reader }

func (bytesStream) Write(p []byte) (int, error) { return len(p), nil }
func (bytesStream) Close() error                { return nil }
func (bytesStream) Abort()                      {}

func encode(msgs ...wire.Message) []byte {
	var b bytes.Buffer
	for _, m := range msgs {
		wire.WriteMessage(&b, m)
	}
	return b.Bytes()
}

// FuzzReadOffer feeds arbitrary control-stream bytes to the receiver's offer
// parser: it never panics, and whatever it accepts is a manifest of safe
// names (or names refused one by one) that adds up to the announced total.
func FuzzReadOffer(f *testing.F) {
	good := []wire.FileEntry{{Path: "a.txt", Size: 3}, {Path: "d/b.bin", Size: 5}}
	seeds := [][]byte{
		encode(&wire.Offer{Transfer: "t", ChunkSize: 1 << 20, Files: 2, TotalBytes: 8}, &wire.OfferFiles{Files: good}),
		encode(&wire.Offer{Transfer: "t", ChunkSize: 1 << 20, Files: 1, TotalBytes: 1}, &wire.OfferFiles{Files: []wire.FileEntry{{Path: "../x", Size: 1}}}),
		encode(&wire.Offer{Transfer: "t", ChunkSize: 1 << 20, Files: 2, TotalBytes: 2}, &wire.OfferFiles{Start: 1, Files: good[:1]}),
		encode(&wire.Offer{Transfer: "t", ChunkSize: 1 << 20, Files: 1, TotalBytes: 9}, &wire.OfferFiles{Files: good[:1]}),
		encode(&wire.Offer{Transfer: "t", ChunkSize: 1 << 20, Files: 0}),
		encode(&wire.Offer{Transfer: "t", ChunkSize: 1 << 20, Files: 2, TotalBytes: 8 << 20},
			&wire.OfferFiles{Files: []wire.FileEntry{{Path: "disk.img", Size: 8<<20 - 1, Holes: 7 << 20}, {Path: "z", Size: 1, Holes: 1}}}),
		encode(&wire.Offer{Transfer: "t", ChunkSize: 1 << 20, Files: 1, TotalBytes: 1}, &wire.OfferFiles{Files: []wire.FileEntry{{Path: "h", Size: 1, Holes: 2}}}),
		encode(&wire.Offer{Transfer: "t", ChunkSize: 1 << 20, Files: 3, TotalBytes: 3}, &wire.OfferFiles{Files: []wire.FileEntry{{Path: "A", Size: 1}, {Path: "a", Size: 1}}}),
		{0xff, 0, 0, 0, 0},
		nil,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	lists := newOfferLists(f.TempDir(), defaultManifestDisk, slog.New(slog.DiscardHandler))
	f.Fuzz(func(t *testing.T, data []byte) {
		e := &Engine{name: "fuzz", opts: Options{ManifestBudget: core.DefaultManifestBudget}, lists: lists}
		tr := &Transfer{}
		in := core.NewInbox(inboxHost{e: e, t: tr}, peer.ID{}, nil, core.InboxConfig{ManifestBudget: e.opts.ManifestBudget})
		rx := &receiver{inbox: &inbox{Inbox: in, e: e, t: tr}, ctl: newControl(bytesStream{bytes.NewReader(data)})}
		defer rx.closeList()
		if err := rx.takeOffer(); err != nil {
			return
		}
		var sum int64
		err := rx.Files.Each(func(i int, fe core.OfferedFile) error {
			// What is accepted is a safe name here, under the name it is
			// saved by ("P./x" from a Mac is kept as it is on Linux and
			// saved as "P_/x" on Windows: store.LocalName).
			if err := store.ValidateHere(store.LocalName(fe.Path)); err != nil && !rx.IsRefused(i) {
				t.Fatalf("accepted %q: %v", fe.Path, err)
			}
			if fe.Size < 0 {
				t.Fatalf("negative size accepted")
			}
			if fe.Holes < 0 || fe.Holes > fe.Size {
				t.Fatalf("%d bytes of holes accepted in a file of %d", fe.Holes, fe.Size)
			}
			sum += fe.Size
			return nil
		})
		if err != nil || rx.Files.Len() != rx.offer.Files || sum != rx.offer.TotalBytes {
			t.Fatalf("accepted %d files / %d bytes for an offer of %d / %d (%v)", rx.Files.Len(), sum, rx.offer.Files, rx.offer.TotalBytes, err)
		}
	})
}
