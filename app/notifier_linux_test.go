package app

import (
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/ferrydrop/ferry/internal/testutil"
	"github.com/ferrydrop/ferry/ui"
)

// replacingServer is org.freedesktop.Notifications as a server that
// replaces (dunst, GNOME Shell, Plasma) plays it: a notification sent
// with replaces_id keeps that ID.
type replacingServer struct {
	mu   sync.Mutex
	sent []sentNotice
}

type sentNotice struct {
	replaces, id uint32
	body         string
}

func (s *replacingServer) Notify(_ string, replaces uint32, _, _, body string, _ []string, _ map[string]dbus.Variant, _ int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := replaces
	if id == 0 {
		id = uint32(len(s.sent) + 1)
	}
	s.sent = append(s.sent, sentNotice{replaces: replaces, id: id, body: body})
	return id, nil
}

func (s *replacingServer) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"actions", "body"}, nil
}

func (s *replacingServer) CloseNotification(uint32) *dbus.Error { return nil }

func (s *replacingServer) all() []sentNotice {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sentNotice(nil), s.sent...)
}

// A notification tagged as one already up replaces it (replaces_id), so
// the summary of 28 transfers from one device takes the place of the
// first one's notification instead of adding one; an older one still on
// its way is not shown over a newer one. Untagged ones stay apart.
func TestNotifierReplacesByTag(t *testing.T) {
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		t.Skip("needs dbus-daemon")
	}
	addr := startAndRead(t, "dbus-daemon", "--session", "--nofork", "--print-address=3", "--address=unix:path="+filepath.Join(t.TempDir(), "bus"))
	srvConn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srvConn.Close() })
	srv := &replacingServer{}
	if err := srvConn.Export(srv, notifyPath, notifyIfc); err != nil {
		t.Fatal(err)
	}
	if r, err := srvConn.RequestName(notifyDest, dbus.NameFlagDoNotQueue); err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("name: %v %v", r, err)
	}
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	n := &notifier{conn: conn, log: slog.New(slog.NewTextHandler(io.Discard, nil)), pending: map[uint32][]ui.NoticeAction{},
		tags: map[string]uint32{}, closing: map[string]bool{}, newest: map[string]uint64{}}

	n.tagged("received:1", "Files received", "Received 2 files (2.0 kB) from Bob.", nil)
	testutil.WaitFor(t, "the first notification", func() bool { return len(srv.all()) == 1 })
	first := srv.all()[0]
	for i := 2; i <= 28; i++ {
		n.tagged("received:1", "Files received", "transfers from Bob: "+string(rune('0'+i%10)), nil)
	}
	n.plain("Files sent", "Sent 1 file to Alice.")
	testutil.WaitFor(t, "the summary and the other notification", func() bool {
		var summary, other bool
		for _, s := range srv.all() {
			summary = summary || s.body == "transfers from Bob: 8"
			other = other || s.body == "Sent 1 file to Alice."
		}
		return summary && other
	})
	var others int
	for _, s := range srv.all()[1:] {
		switch {
		case s.body == "Sent 1 file to Alice.":
			others++
			if s.replaces != 0 {
				t.Errorf("an untagged notification replaced #%d", s.replaces)
			}
		case s.replaces != first.id:
			t.Errorf("%q: replaces #%d, want #%d (the first one's)", s.body, s.replaces, first.id)
		}
	}
	if others != 1 {
		t.Errorf("the untagged notification was sent %d times", others)
	}
	var bob []string
	for _, s := range srv.all() {
		if s.body != "Sent 1 file to Alice." {
			bob = append(bob, s.body)
		}
	}
	if last := bob[len(bob)-1]; last != "transfers from Bob: 8" {
		t.Errorf("Bob's notification ends as %q, want the newest (sent: %q)", last, bob)
	}
}
