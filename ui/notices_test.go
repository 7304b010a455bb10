package ui

import (
	"fmt"
	"testing"
	"time"
)

// tagged is a notification as the notifier got it.
type tagged struct {
	tag, title, body string
	actions          []NoticeAction
}

// 28 transfers from one device in a minute are one notification that is
// replaced by a summary, not 28 "Files received" (as they were); another
// device's stay apart, and a device quiet for a while starts anew.
func TestReceivedNotificationsCoalescePerDevice(t *testing.T) {
	u, _, c := newTestUI(t)
	var got []tagged
	u.opt.NotifyTagged = func(tag, title, body string, a []NoticeAction) { got = append(got, tagged{tag, title, body, a}) }
	u.opt.NotifyActions = func(title, body string, a []NoticeAction) { got = append(got, tagged{"", title, body, a}) }
	receive := func(id string, from Peer, files int) {
		u.ApplyTransfer(TransferEvent{Kind: TransferResult, ID: id, Direction: Incoming, Peer: from,
			Result: &Result{State: StateDone, Files: files, Verified: files, Bytes: int64(files) * 1000, Destination: "/home/u/Downloads"}})
	}
	bob := Peer{ID: idBob, Name: "Bob"}
	alice := Peer{ID: idAlice, Name: "Alice"}
	for i := range 28 {
		receive(fmt.Sprintf("b%d", i), bob, 2)
		if i == 3 {
			receive("a0", alice, 1)
		}
		c.t = c.t.Add(2 * time.Second)
		u.flushNotices(c.t) // Run's tick
	}
	if len(got) != 2 || got[0].title != "Files received" || got[0].body != "Received 2 files (2.0 kB) from Bob." ||
		got[1].body != "Received 1 file (1.0 kB) from Alice." || got[0].tag == "" || got[0].tag == got[1].tag {
		t.Fatalf("during the burst: %+v", got)
	}
	// A burst that goes on is summed up now and then, in the same notification.
	c.t = c.t.Add(4 * time.Second)
	receive("b28", bob, 2) // 1 min after the first: a summary is due
	u.flushNotices(c.t)
	if len(got) != 3 || got[2].tag != got[0].tag || got[2].body != "29 transfers from Bob: 58 files (58.0 kB)." {
		t.Fatalf("a minute into the burst: %+v", got[2:])
	}
	// Bob goes quiet: nothing more to tell, and his next transfer is new.
	c.t = c.t.Add(30 * time.Second)
	u.flushNotices(c.t)
	if len(got) != 3 {
		t.Fatalf("after the burst: %+v", got[3:])
	}
	receive("b29", bob, 1)
	if len(got) != 4 || got[3].body != "Received 1 file (1.0 kB) from Bob." || got[3].tag == got[0].tag {
		t.Fatalf("after a quiet while: %+v", got[3:])
	}
	// A short burst is summed up once its sender is quiet.
	c.t = c.t.Add(time.Second)
	receive("b30", bob, 3)
	c.t = c.t.Add(9 * time.Second)
	u.flushNotices(c.t)
	if len(got) != 4 {
		t.Fatalf("before the quiet period ended: %+v", got[4:])
	}
	c.t = c.t.Add(time.Second)
	u.flushNotices(c.t)
	if len(got) != 5 || got[4].tag != got[3].tag || got[4].body != "2 transfers from Bob: 4 files (4.0 kB)." {
		t.Fatalf("short burst: %+v", got[4:])
	}
	// Its button opens History (these results name no file to show).
	if a := got[4].actions; len(a) != 1 || a[0].Key != "default" || a[0].Label != "Show in Ferry" {
		t.Fatalf("summary's buttons: %+v", a)
	}
	u.SetWindowShown(false)
	got[4].actions[0].Do()
	if u.hidden || u.tabs.Selected().Text != "History" {
		t.Errorf("Show in Ferry: hidden %v, tab %q", u.hidden, u.tabs.Selected().Text)
	}
}
