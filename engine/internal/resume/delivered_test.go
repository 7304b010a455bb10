package resume

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deliveredState is a finished delivery's state as a receiver keeps it:
// two saved files, one renamed on arrival.
func deliveredState() *State {
	return &State{Peer: "PEER", PeerName: "Bob", Delivery: "0123456789abcdef01234567", Manifest: "m", ChunkSize: 1 << 20,
		Dest: "/dl", Accepted: 2, Files: []File{
			{Index: 0, Path: "a.bin", Size: 3, Done: true, SavedAs: "a.bin"},
			{Index: 1, Path: "b.bin", Size: 4, Done: true, SavedAs: "b (1).bin"},
		}}
}

// deliver keeps s as key's state, then as its delivered record.
func deliver(t *testing.T, d *Dir, key string, s *State) {
	t.Helper()
	if err := d.Compact(key, s); err != nil {
		t.Fatal(err)
	}
	if err := d.Deliver(key); err != nil {
		t.Fatal(err)
	}
}

func deliveredOffer(peer string) Offered {
	files := []OfferedFile{{"a.bin", 3}, {"b.bin", 4}}
	return Offered{Peer: peer, Manifest: "m", ChunkSize: 1 << 20, Dest: "/dl", Files: len(files),
		File: func(i int) (OfferedFile, error) { return files[i], nil }}
}

func validName(name string) error {
	if name == "" || strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
		return fmt.Errorf("bad name %q", name)
	}
	return nil
}

// What a delivered record on disk gives a later session of a delivery:
// only a record of that delivery, young enough and readable, and only for
// the device it was kept for. A record altered on disk (or of another
// device, copied under this key) resumes nothing. These double as
// FuzzDelivered's seeds.
var deliveredCases = []struct {
	name     string
	delivery string                  // asked for; "" is deliveredState's
	after    time.Duration           // the clock moved on since it was kept
	edit     func(b []byte) []byte   // the record's snapshot on disk, altered
	journal  func(b []byte) []byte   // its journal, altered
	found    int                     // files Delivered returns (-1: none)
	fits     bool                    // and it passes State.Check for PEER
	state    func(s *State)          // applied before it is kept
	offer    func(o Offered) Offered // nil: PEER's offer
}{
	{name: "kept", found: 2, fits: true},
	{name: "another delivery", delivery: "ffffffffffffffffffffffff", found: -1},
	{name: "no delivery asked for", delivery: "-", found: -1},
	{name: "past its age", after: DeliveredFor + time.Minute, found: -1},
	{name: "from the future", after: -time.Hour, found: -1},
	{name: "garbage", edit: func(b []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(b)) }, found: -1},
	{name: "cut short", edit: func(b []byte) []byte { return b[:len(b)/2] }, found: -1},
	{name: "empty", edit: func([]byte) []byte { return nil }, found: -1},
	{name: "another device's, offered by PEER", state: func(s *State) { s.Peer = "OTHER" }, found: 2},
	{name: "offered by another device", found: 2, offer: func(o Offered) Offered { o.Peer = "OTHER"; return o }},
	{name: "another download folder", state: func(s *State) { s.Dest = "/elsewhere" }, found: 2},
	{name: "another manifest", state: func(s *State) { s.Manifest = "n" }, found: 2},
	{name: "a saved name that climbs out", state: func(s *State) { s.Files[1].SavedAs = "../../etc/passwd" }, found: 2},
	{name: "a file index past the offer", state: func(s *State) { s.Files[1].Index = 7 }, found: 2},
	{name: "a size other than the offer's", state: func(s *State) { s.Files[0].Size = 1 << 40 }, found: 2},
	{name: "a partial among its files", state: func(s *State) { s.Files[1].Done, s.Files[1].Partial = false, "b.bin.partial" }, found: 1, fits: true},
	{name: "unremoved partials", state: func(s *State) { s.Unremoved = true }, found: -1},
	{name: "an old version", edit: func(b []byte) []byte { return bytes.Replace(b, []byte(`"version":3`), []byte(`"version":1`), 1) }, found: 2},
	{name: "its journal garbled", journal: func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xa5}, 64)...) }, found: 2, fits: true},
	{name: "its journal naming a file it does not have", journal: func(b []byte) []byte {
		var j bytes.Buffer
		frame(&j, named(recPartial, 9, "x.partial"))
		return append(b, j.Bytes()...)
	}, found: -1},
	{name: "its journal gone", journal: func([]byte) []byte { return nil }, found: 2, fits: true},
}

func TestDeliveredRecordCases(t *testing.T) {
	for _, c := range deliveredCases {
		t.Run(c.name, func(t *testing.T) {
			now := time.Unix(1_800_000_000, 0)
			d := Open(t.TempDir(), nil, func() time.Time { return now })
			s := deliveredState()
			if c.state != nil {
				c.state(s)
			}
			deliver(t, d, "k", s)
			if c.edit != nil {
				p := d.deliveredDir().snapshotPath("k")
				b, _ := os.ReadFile(p)
				os.WriteFile(p, c.edit(b), 0o600)
				os.Chtimes(p, now, now)
			}
			if c.journal != nil {
				p := d.deliveredDir().journalPath("k")
				b, _ := os.ReadFile(p)
				os.WriteFile(p, c.journal(b), 0o600)
			}
			now = now.Add(c.after)
			delivery := deliveredState().Delivery
			switch c.delivery {
			case "":
			case "-":
				delivery = ""
			default:
				delivery = c.delivery
			}
			got := d.Delivered("k", delivery)
			if c.found < 0 {
				if got != nil {
					t.Fatalf("found %+v", got)
				}
				return
			}
			if got == nil || len(got.Files) != c.found {
				t.Fatalf("found %+v, want %d files", got, c.found)
			}
			o := deliveredOffer("PEER")
			if c.offer != nil {
				o = c.offer(o)
			}
			if err := got.Check(o, validName); (err == nil) != c.fits {
				t.Errorf("fits the offer: %v, want %v", err, c.fits)
			}
			if c.found == 2 && c.state == nil && got.Files[1].SavedAs != "b (1).bin" {
				t.Errorf("read back %+v", got.Files)
			}
		})
	}
}

func FuzzDelivered(f *testing.F) {
	for _, c := range deliveredCases {
		s := deliveredState()
		s.Version = Version // as Compact writes it
		if c.state != nil {
			c.state(s)
		}
		var whole bytes.Buffer
		s.encode(&whole)
		b := whole.Bytes()
		if c.edit != nil {
			b = c.edit(b)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := Open(t.TempDir(), nil, nil)
		os.MkdirAll(d.deliveredDir().path, 0o700)
		os.WriteFile(d.deliveredDir().snapshotPath("k"), b, 0o600)
		if i := bytes.IndexByte(b, 0); i >= 0 { // the rest, its journal
			os.WriteFile(d.deliveredDir().snapshotPath("k"), b[:i], 0o600)
			os.WriteFile(d.deliveredDir().journalPath("k"), b[i+1:], 0o600)
		}
		var s State
		json.Unmarshal(b, &s)
		got := d.Delivered("k", s.Delivery)
		if got == nil {
			return
		}
		if got.Delivery == "" || got.Delivery != s.Delivery || got.Unremoved {
			t.Fatalf("delivery %q found %+v", s.Delivery, got)
		}
		// What fits the offer lists only saved files of it, once each,
		// under names the store takes.
		o := deliveredOffer("PEER")
		if got.Check(o, validName) != nil {
			return
		}
		seen := map[uint32]bool{}
		for _, f := range got.Files {
			want, err := o.File(int(f.Index))
			if !f.Done || validName(f.SavedAs) != nil || seen[f.Index] || err != nil || f.Path != want.Path || f.Size != want.Size {
				t.Fatalf("a record that fits the offer lists %+v", f)
			}
			seen[f.Index] = true
		}
	})
}

// A finished delivery's state goes as its record is kept; the records are
// bounded: per device, in all, and by age.
func TestDeliveredRecordsAreBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	d := Open(t.TempDir(), nil, func() time.Time { return now })
	deliver(t, d, "live", deliveredState())
	if s, err := d.Load("live"); s != nil || err != nil || len(d.List()) != 0 {
		t.Fatalf("the delivered state is still there: %+v, %v", s, err)
	}
	keep := func(key, peer string) {
		t.Helper()
		now = now.Add(time.Second)
		s := deliveredState()
		s.Peer = peer
		deliver(t, d, key, s)
	}
	for i := range deliveredPerPeer + 4 {
		keep(fmt.Sprintf("a%02d", i), "A")
	}
	keep("b", "B")
	for i := range 4 {
		if d.Delivered(fmt.Sprintf("a%02d", i), deliveredState().Delivery) != nil {
			t.Errorf("a%02d, one of A's oldest, was kept", i)
		}
	}
	for _, k := range []string{"a04", fmt.Sprintf("a%02d", deliveredPerPeer+3), "b", "live"} {
		if d.Delivered(k, deliveredState().Delivery) == nil {
			t.Errorf("%s is gone", k)
		}
	}
	entries, _ := os.ReadDir(d.deliveredDir().path)
	if len(entries) != 2*(deliveredPerPeer+2) { // snapshot and journal each
		t.Errorf("%d files kept, want %d", len(entries), 2*(deliveredPerPeer+2))
	}
	now = now.Add(DeliveredFor + time.Hour)
	d.PruneDelivered()
	if entries, _ := os.ReadDir(d.deliveredDir().path); len(entries) != 0 {
		t.Errorf("%d files kept past their age", len(entries))
	}
}

// A sender keeps the delivery it offers until it hears the end: the same
// send run again finds it, unless a send in another process holds it now
// (where files are locked); heard, it is gone, and a delivery file that
// is not one gives nothing.
func TestHeldDelivery(t *testing.T) {
	d := Open(t.TempDir(), nil, nil)
	const id = "0123456789abcdef01234567"
	h := d.HoldDelivery("k", id)
	if got := d.Delivery("k"); Locking && got != "" {
		t.Errorf("a held delivery was handed out: %q", got)
	}
	h.Release()
	if got := d.Delivery("k"); got != id {
		t.Errorf("kept %q, want %q", got, id)
	}
	other := d.HoldDelivery("k", "ffffffffffffffffffffffff")
	h.Heard() // not its delivery any more: it stays
	other.Release()
	if got := d.Delivery("k"); got != "ffffffffffffffffffffffff" {
		t.Errorf("another send's delivery was forgotten: %q", got)
	}
	other.Heard()
	if got := d.Delivery("k"); got != "" {
		t.Errorf("a heard delivery is still kept: %q", got)
	}
	for _, bad := range []string{"", "\n", "0123\n", "0123456789ABCDEF01234567\n", "0123456789abcdef0123456g\n",
		"0123456789abcdef01234567", strings.Repeat("ab", 40) + "\n", "../../0123456789abcdef\n"} {
		if got := parseDeliveryID([]byte(bad)); got != "" {
			t.Errorf("%q read as %q", bad, got)
		}
	}
	for i := range maxDeliveries + 3 {
		d.HoldDelivery(fmt.Sprintf("k%02d", i), id).Release()
	}
	if m, _ := filepath.Glob(filepath.Join(d.Path(), "send-*.delivery")); len(m) != maxDeliveries {
		t.Errorf("%d deliveries kept, want %d", len(m), maxDeliveries)
	}
}
