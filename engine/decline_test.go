package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/core"
)

// emptyTree makes n empty files under a folder of dir, in folders of at
// most 1000, and returns the folder.
func emptyTree(t testing.TB, dir string, n int) string {
	t.Helper()
	root := filepath.Join(dir, "tree")
	for i := range n {
		sub := filepath.Join(root, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file-%06d.txt", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Issue 30: a decline of any kind ends the send at once with the
// receiver's reason; the sender never retries it into "could not connect".
// The too-large refusal comes part-way through the manifest (the first of
// its parts is over the receiver's limit): the sender is still writing the
// rest when the refusal arrives.
func TestDeclineEndsTheSendAtOnce(t *testing.T) {
	src := emptyTree(t, t.TempDir(), 3000) // two manifest parts
	small := filepath.Join(t.TempDir(), "a.txt")
	writeFile(t, small, 10)
	cases := []struct {
		name  string
		opts  Options
		paths []string
		// decide answers the receiver's prompt, when it asks.
		decide Decision
		want   []string
	}{
		// The count fits, the names of the first part do not.
		{"too large", Options{Accept: AcceptAll, ManifestBudget: 3000*core.ManifestFileCost + 30_000}, []string{src}, Decision{},
			[]string{"Declined: Bob's laptop takes file lists of at most " + core.HumanBytes(3000*core.ManifestFileCost+30_000) + " in one transfer"}},
		{"declined by the user", Options{Accept: AcceptAsk}, []string{small}, Decision{Reason: "not today"},
			[]string{"Declined by Bob's laptop: not today."}},
		{"trusted only", Options{Accept: AcceptTrusted}, []string{small}, Decision{},
			[]string{"only accepts files from trusted devices"}},
	}
	for _, c := range cases {
		for _, tp := range transportsUnderTest() {
			t.Run(c.name+"/"+tp, func(t *testing.T) {
				c.opts.Name = "Bob's laptop"
				recv := startReceiver(t, c.opts)
				prompts, unsub := recv.Subscribe(64)
				defer unsub()
				go func() {
					for ev := range prompts {
						if ev.Kind == EventOffer && ev.Direction == Receiving {
							recv.Decide(ev.TransferID, c.decide)
						}
					}
				}()
				send := testEngine(t, Options{}) // retries for 2 minutes, as a user's
				events, unsubSend := send.Subscribe(4096)
				defer unsubSend()
				res := sendWait(t, send, target(recv), c.paths, SendOptions{Transport: tp})
				if res.State != StateDeclined {
					t.Fatalf("got %s %q (%s), want declined", res.State, res.Err, res.Detail)
				}
				for _, w := range c.want {
					if !strings.Contains(res.Err, w) {
						t.Errorf("the sender reads %q, want it to say %q", res.Err, w)
					}
				}
				for len(events) > 0 {
					if ev := <-events; ev.State == StateRetrying {
						t.Fatalf("the sender retried a decline: %+v", ev.Result)
					}
				}
				if entries, _ := os.ReadDir(recv.DownloadDir()); len(entries) != 0 {
					t.Errorf("a declined offer wrote %v", entries)
				}
			})
		}
	}
}

// An offer whose every file the receiver refuses (a name it cannot take)
// ends with the receiver's reason in the same words over either transport:
// QUIC carries it in its close, which once read "Waiting for the receiver:
// a file name was refused: ...".
func TestEveryFileRefusedSaysWhy(t *testing.T) {
	src := filepath.Join(t.TempDir(), "x\x1b.txt")
	writeFile(t, src, 10)
	for _, tp := range transportsUnderTest() {
		t.Run(tp, func(t *testing.T) {
			recv := startReceiver(t, Options{Accept: AcceptAll})
			send := testEngine(t, Options{})
			res := sendWait(t, send, target(recv), []string{src}, SendOptions{Transport: tp})
			if res.State == StateDone || !strings.HasPrefix(res.Err, "A file name was refused") || !strings.Contains(res.Err, `"x\x1b.txt"`) {
				t.Fatalf("got %s %q, want the refusal in the receiver's words", res.State, res.Err)
			}
		})
	}
}
