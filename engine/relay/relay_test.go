package relay

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/anywhere"
)

func name(c byte) string { return strings.Repeat(string(c), anywhere.NameLen) }

func TestMailboxSlotsAndQueues(t *testing.T) {
	t.Parallel()
	m := NewMailbox(Limits{})
	if _, err := m.Handle(http.MethodPut, anywhere.PathSlot+name('a'), "s", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Handle(http.MethodPut, anywhere.PathSlot+name('a'), "s", []byte("two")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a slot is kept when read
		out, err := m.Handle(http.MethodPost, anywhere.PathSlots, "x", anywhere.EncodeNames([]string{name('b'), name('a')}))
		if err != nil {
			t.Fatal(err)
		}
		got, err := anywhere.DecodeRecords(out, 2)
		if err != nil || len(got[0]) != 0 || len(got[1]) != 1 || string(got[1][0]) != "two" {
			t.Fatalf("slots: %q %v", got, err)
		}
	}
	for _, b := range []string{"c1", "c2"} {
		if _, err := m.Handle(http.MethodPost, anywhere.PathQueue+name('c'), "s", []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := m.Handle(http.MethodPost, anywhere.PathQueues, "x", anywhere.EncodeNames([]string{name('c')}))
	got, err := anywhere.DecodeRecords(out, 1)
	if err != nil || len(got[0]) != 2 || string(got[0][0]) != "c1" {
		t.Fatalf("queue: %q %v", got, err)
	}
	out, _ = m.Handle(http.MethodPost, anywhere.PathQueues, "x", anywhere.EncodeNames([]string{name('c')}))
	if len(out) != 0 {
		t.Fatalf("a queue read twice: %q", out)
	}
	if m.Held() != 1 {
		t.Fatalf("held %d, want the one slot", m.Held())
	}
}

// TestMailboxHostile: requests a stranger on the internet could make.
func TestMailboxHostile(t *testing.T) {
	t.Parallel()
	m := NewMailbox(Limits{})
	for _, tc := range []struct {
		name, method, path string
		body               []byte
	}{
		{"unknown path", http.MethodGet, "/", nil},
		{"slot by GET", http.MethodGet, anywhere.PathSlot + name('a'), []byte("x")},
		{"bad name", http.MethodPut, anywhere.PathSlot + "../../etc/passwd", []byte("x")},
		{"upper-case name", http.MethodPut, anywhere.PathSlot + strings.ToUpper(name('a')), []byte("x")},
		{"empty blob", http.MethodPut, anywhere.PathSlot + name('a'), nil},
		{"big blob", http.MethodPost, anywhere.PathQueue + name('a'), make([]byte, anywhere.MaxBlob+1)},
		{"no names", http.MethodPost, anywhere.PathSlots, nil},
		{"bad names", http.MethodPost, anywhere.PathQueues, []byte("a\nb")},
	} {
		if _, err := m.Handle(tc.method, tc.path, "s", tc.body); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if m.Held() != 0 {
		t.Fatalf("held %d after refusals", m.Held())
	}
}

func TestMailboxBounds(t *testing.T) {
	t.Parallel()
	m := NewMailbox(Limits{PerSource: 10, Total: 15, QueueTTL: time.Minute})
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	// One queue holds MaxQueue blobs.
	for i := range anywhere.MaxQueue + 1 {
		_, err := m.Handle(http.MethodPost, anywhere.PathQueue+name('f'), "s", []byte("x"))
		if (err != nil) != (i == anywhere.MaxQueue) {
			t.Fatalf("blob %d: %v", i, err)
		}
	}
	// One source holds PerSource blobs, whatever the names.
	put := func(src string, c byte) error {
		_, err := m.Handle(http.MethodPut, anywhere.PathSlot+fmt.Sprintf("%032x", c), src, []byte("x"))
		return err
	}
	if err := put("s", 'a'); err != nil {
		t.Fatal(err)
	}
	if err := put("s", 'b'); err != nil {
		t.Fatal(err)
	}
	if err := put("s", 'c'); !errors.Is(err, errFull) {
		t.Fatalf("11th blob of one source: %v", err)
	}
	if err := put("s", 'a'); err != nil {
		t.Fatalf("replacing a slot at the limit: %v", err)
	}
	// The total binds every source together.
	for i := range 5 {
		if err := put("t", byte('d'+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := put("u", 'z'); !errors.Is(err, errBusy) {
		t.Fatalf("over the total: %v", err)
	}
	// Everything goes when its time is up.
	now = now.Add(3 * time.Minute)
	if err := put("u", 'z'); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if m.Held() != 1 {
		t.Fatalf("held %d after expiry, want 1", m.Held())
	}
}

func FuzzMailboxHandle(f *testing.F) {
	f.Add(0, anywhere.PathSlot+name('a'), []byte("x"))
	f.Add(1, anywhere.PathQueue+name('a'), []byte("x"))
	f.Add(1, anywhere.PathQueues, []byte(name('a')))
	f.Add(1, anywhere.PathSlots, []byte(name('a')+"\n"+name('b')))
	f.Fuzz(func(t *testing.T, method int, path string, body []byte) {
		m := NewMailbox(Limits{PerSource: 4, Total: 8})
		meth := []string{http.MethodPut, http.MethodPost, http.MethodGet}[(method%3+3)%3]
		for range 3 {
			out, err := m.Handle(meth, path, "s", body)
			if err == nil && len(out) > anywhere.MaxReply {
				t.Fatalf("reply of %d bytes", len(out))
			}
		}
		if m.Held() > 4 {
			t.Fatalf("one source holds %d", m.Held())
		}
	})
}

// TestRelayMailboxOverHTTP: the client against the real server on loopback,
// and a relay that is down.
func TestRelayMailboxOverHTTP(t *testing.T) {
	t.Parallel()
	r, err := Start(Config{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := r.Addr().String()
	mb := anywhere.NewMailbox(addr)
	defer mb.Close()
	ctx := context.Background()
	if err := mb.Push(ctx, name('a'), []byte("call")); err != nil {
		t.Fatal(err)
	}
	got, err := mb.Take(ctx, []string{name('a')})
	if err != nil || len(got[0]) != 1 || string(got[0][0]) != "call" {
		t.Fatalf("take: %q %v", got, err)
	}
	if err := mb.Push(ctx, "nope", []byte("x")); !errors.Is(err, anywhere.ErrRelayRefused) {
		t.Fatalf("bad name: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mb.Put(ctx, name('a'), []byte("x")); !errors.Is(err, anywhere.ErrRelayUnreachable) {
		t.Fatalf("relay down: %v", err)
	}
}
