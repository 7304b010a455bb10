package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/internal/errcode"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/internal/clock"
)

// fakeHost is an engine's transfer as the inbox sees it, recording what
// the inbox tells it.
type fakeHost struct {
	peer        PeerInfo
	policy      AcceptPolicy
	autoTrusted bool
	dir         string
	answers     chan Decision

	mu       sync.Mutex // guards the fields below
	id       string
	asked    []*Prompt
	accepted []*Prompt // offers accepted without asking (Unasked, StateActive)
	files    []*FileResult
	states   []State
	result   *Result
	began    int
	always   bool
	asking   bool
	finished chan struct{}
}

func newFakeHost(t *testing.T, policy AcceptPolicy, trusted bool) *fakeHost {
	return &fakeHost{peer: PeerInfo{Name: "Bob", Trusted: trusted}, policy: policy, dir: t.TempDir(),
		answers: make(chan Decision, 1), finished: make(chan struct{})}
}

func (h *fakeHost) Name() string   { return "Anna" }
func (h *fakeHost) Peer() PeerInfo { return h.peer }
func (h *fakeHost) Policy() (AcceptPolicy, bool, string) {
	return h.policy, h.autoTrusted, h.dir
}
func (h *fakeHost) Named(id, _ string) { h.mu.Lock(); h.id = id; h.mu.Unlock() }
func (h *fakeHost) Register() error    { return nil }
func (h *fakeHost) Queued(int)         {}
func (h *fakeHost) Ask(p *Prompt) (<-chan Decision, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, p)
	h.asking = true
	return h.answers, func() { h.mu.Lock(); h.asking = false; h.mu.Unlock() }
}
func (h *fakeHost) Unasked(p *Prompt, s State) {
	h.mu.Lock()
	if s == StateActive {
		h.accepted = append(h.accepted, p)
	}
	h.mu.Unlock()
}
func (h *fakeHost) AlwaysAccept() { h.mu.Lock(); h.always = true; h.mu.Unlock() }
func (h *fakeHost) File(_ int, fr *FileResult) {
	h.mu.Lock()
	h.files = append(h.files, fr)
	h.mu.Unlock()
}
func (h *fakeHost) State(s State)     { h.mu.Lock(); h.states = append(h.states, s); h.mu.Unlock() }
func (h *fakeHost) Began()            { h.mu.Lock(); h.began++; h.mu.Unlock() }
func (h *fakeHost) Ended(bool)        { h.mu.Lock(); h.began--; h.mu.Unlock() }
func (h *fakeHost) Log() *slog.Logger { return slog.New(slog.DiscardHandler) }
func (h *fakeHost) Finish(r Result)   { h.mu.Lock(); h.result = &r; h.mu.Unlock(); close(h.finished) }
func (h *fakeHost) WatchProgress(ctx context.Context, _ func() int64, _ int64, _ func() int, _ int) {
	<-ctx.Done()
}

func (h *fakeHost) prompts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.asked)
}

var bob = peer.FromFerry([32]byte{1})

// newTestInbox is an inbox of host with a ticket of a real admission, on clk.
func newTestInbox(t *testing.T, host *fakeHost, clk clock.Clock) *Inbox {
	t.Helper()
	a := NewAdmission(4, DefaultMuteDeclined, DefaultManifestBudget, clk.Now)
	tk, refused := a.Arrive("192.0.2.1:1000", bob, func() {})
	if refused != nil {
		t.Fatal(refused)
	}
	t.Cleanup(tk.End)
	return NewInbox(host, bob, tk, InboxConfig{ManifestBudget: DefaultManifestBudget, PromptTimeout: 2 * time.Minute, Clock: clk})
}

// The accept policy: who is accepted silently, refused, or asked.
func TestInboxPolicy(t *testing.T) {
	for _, c := range []struct {
		name        string
		policy      AcceptPolicy
		trusted     bool
		autoTrusted bool
		ask         bool
		accept      bool
		code        errcode.Code // of a refusal
	}{
		{"all", AcceptAll, false, false, false, true, ""},
		{"trusted, from a trusted device", AcceptTrusted, true, false, false, true, ""},
		{"trusted, from another", AcceptTrusted, false, false, false, false, errcode.CodeUntrusted},
		{"ask, trusted accepted silently", AcceptAsk, true, true, false, true, ""},
		{"ask, trusted but asked", AcceptAsk, true, false, true, true, ""},
		{"ask", AcceptAsk, false, true, true, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newFakeHost(t, c.policy, c.trusted)
			h.autoTrusted = c.autoTrusted
			h.answers <- Decision{Accept: true}
			in := newTestInbox(t, h, clock.Real{})
			if err := in.Offer("d1", Files{{Path: "a.txt", Size: 3}}, ""); err != nil {
				t.Fatal(err)
			}
			v, err := in.Decide(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if v.Accept != c.accept || !v.Accept && v.Code != c.code || (h.prompts() == 1) != c.ask {
				t.Errorf("verdict %+v, asked %d times; want accept=%v code %q asked=%v", v, h.prompts(), c.accept, c.code, c.ask)
			}
			if c.accept && (in.Dest == nil || len(in.Accepted) != 1 || in.DestDir != h.dir) {
				t.Errorf("accepted into %v %q, files %v", in.Dest, in.DestDir, in.Accepted)
			}
			// What is accepted unasked is still shown (its names, for the
			// row and the history): once, and never beside a prompt.
			h.mu.Lock()
			shown := h.accepted
			h.mu.Unlock()
			if silent := c.accept && !c.ask; silent != (len(shown) == 1) || len(shown) > 1 ||
				silent && (shown[0].Count != 1 || len(shown[0].Files) != 1 || shown[0].Files[0].Path != "a.txt" || shown[0].Dest != h.dir) {
				t.Errorf("accepted unasked %v, shown %d times: %+v", c.accept && !c.ask, len(shown), shown)
			}
			if in.Dest != nil {
				in.Dest.Close()
			}
		})
	}
}

// Names that cannot be stored are refused one by one, reported when the
// transfer begins and counted in its result; the rest is received.
func TestInboxRefusesNamesOneByOne(t *testing.T) {
	h := newFakeHost(t, AcceptAll, false)
	in := newTestInbox(t, h, clock.Real{})
	files := Files{{Path: "../escape", Size: 1}, {Path: "ok.txt", Size: 2}, {Path: "ok\u202etxt.exe", Size: 2}}
	if err := in.Offer("d1", files, ""); err != nil {
		t.Fatal(err)
	}
	if !in.IsRefused(0) || in.IsRefused(1) || !in.IsRefused(2) || len(in.Refused) != 2 {
		t.Fatalf("refused %+v", in.Refused)
	}
	if !strings.HasPrefix(h.id, "r-") {
		t.Errorf("the transfer is named %q, not after the peer and the delivery", h.id)
	}
	v, err := in.Decide(t.Context())
	if err != nil || !v.Accept || len(in.Accepted) != 1 || in.Accepted[0] != 1 {
		t.Fatalf("verdict %+v, %v; accepted %v", v, err, in.Accepted)
	}
	in.Begin()
	if len(h.files) != 2 || h.files[0].Err == "" || h.states[len(h.states)-1] != StateActive {
		t.Fatalf("began with files %+v, states %v", h.files, h.states)
	}
	in.Bytes.Add(2)
	if n := in.Resolved(1, true, "ok (1).txt", "", ""); n != 1 {
		t.Fatalf("%d resolved", n)
	}
	in.Finish(nil, false, Result{})
	r := h.result
	if r == nil || r.State != StateDone || r.Files != 1 || r.Verified != 1 || r.Refused != 2 || r.Bytes != 2 || r.TotalBytes != 2 || r.Destination != h.dir {
		t.Errorf("result %+v", r)
	}
	if h.files[2].SavedAs != "ok (1).txt" || h.began != 0 {
		t.Errorf("file %+v; sessions counted %d after the end", h.files[2], h.began)
	}
}

// A file over the largest the destination's file system holds (a FAT
// stick's 4 GiB) is refused with the offer, before the prompt, with why;
// the rest arrives. It failed once written, after its bytes crossed
// ("Not saved: operation not permitted." on a fusefat stick). An offer of
// such files only is refused whole; a folder chosen at the prompt is
// checked too.
func TestInboxRefusesFilesOverTheFileSystemsLimit(t *testing.T) {
	fat := t.TempDir()
	newInbox := func(h *fakeHost) *Inbox {
		a := NewAdmission(4, DefaultMuteDeclined, DefaultManifestBudget, time.Now)
		tk, refused := a.Arrive("192.0.2.1:1000", bob, func() {})
		if refused != nil {
			t.Fatal(refused)
		}
		t.Cleanup(tk.End)
		return NewInbox(h, bob, tk, InboxConfig{ManifestBudget: DefaultManifestBudget, PromptTimeout: time.Minute, Clock: clock.Real{},
			FileLimit: func(dir string) store.FileLimit {
				if dir == fat {
					return store.FileLimit{Max: store.FATMax, FS: "FAT32"}
				}
				return store.FileLimit{}
			}})
	}
	const why = "the download folder is on a FAT32 drive, which holds files of up to 4.3 GB (this one is 5.4 GB)"
	files := Files{{Path: "film.mkv", Size: 5 << 30}, {Path: "notes.txt", Size: 2}, {Path: "exactly.bin", Size: store.FATMax}}

	h := newFakeHost(t, AcceptAsk, false)
	h.dir = fat
	h.answers <- Decision{Accept: true}
	in := newInbox(h)
	if err := in.Offer("d1", files, ""); err != nil {
		t.Fatal(err)
	}
	v, err := in.Decide(t.Context())
	if err != nil || !v.Accept || fmt.Sprint(in.Accepted) != "[1 2]" {
		t.Fatalf("verdict %+v, %v; accepted %v", v, err, in.Accepted)
	}
	if p := h.asked[0]; len(p.Files) != 3 || p.Files[0].Refused != why || p.Files[1].Refused != "" || p.TotalBytes != 2+store.FATMax {
		t.Errorf("the prompt shows %+v, %d bytes", p.Files, p.TotalBytes)
	}
	in.Begin()
	if len(h.files) != 1 || h.files[0].Path != "film.mkv" || h.files[0].Err != "The download folder is on a FAT32 drive, which holds files of up to 4.3 GB (this one is 5.4 GB)." {
		t.Errorf("began with files %+v", h.files)
	}
	if len(in.Refused) != 1 || in.Refused[0].Code != errcode.CodeNoSpace || in.Refused[0].Reason != why {
		t.Errorf("refused %+v (the sender's words)", in.Refused)
	}

	// Only such files: refused whole, no one asked.
	h = newFakeHost(t, AcceptAsk, false)
	h.dir = fat
	in = newInbox(h)
	if err := in.Offer("d2", files[:1], ""); err != nil {
		t.Fatal(err)
	}
	v, err = in.Decide(t.Context())
	if err != nil || v.Accept || v.Code != errcode.CodeNoSpace || v.Reason != "film.mkv: "+why || h.prompts() != 0 {
		t.Errorf("verdict %+v, %v; asked %d times", v, err, h.prompts())
	}

	// Another folder, where the limit is none: all asked about; the stick
	// chosen at the prompt: the film refused there.
	h = newFakeHost(t, AcceptAsk, false)
	h.answers <- Decision{Accept: true, Dest: fat}
	in = newInbox(h)
	if err := in.Offer("d3", files, ""); err != nil {
		t.Fatal(err)
	}
	v, err = in.Decide(t.Context())
	if err != nil || !v.Accept || fmt.Sprint(in.Accepted) != "[1 2]" || in.DestDir != fat || h.asked[0].Files[0].Refused != "" {
		t.Fatalf("verdict %+v, %v; accepted %v into %q; asked %+v", v, err, in.Accepted, in.DestDir, h.asked[0].Files)
	}
}

// An offer whose every file is refused, with no text, is refused whole; a
// text keeps it.
func TestInboxAllNamesRefused(t *testing.T) {
	in := newTestInbox(t, newFakeHost(t, AcceptAll, false), clock.Real{})
	if err := in.Offer("d1", Files{{Path: "../a", Size: 1}}, ""); !errors.Is(err, errcode.ErrBadName) {
		t.Errorf("an offer of refused names only: %v", err)
	}
	in = newTestInbox(t, newFakeHost(t, AcceptAll, false), clock.Real{})
	if err := in.Offer("d2", Files{{Path: "../a", Size: 1}}, "hello"); err != nil {
		t.Errorf("an offer with a text: %v", err)
	}
}

// The limits: a file list over the budget, a text over MaxTextLen or not
// UTF-8, an empty offer.
func TestInboxLimits(t *testing.T) {
	h := newFakeHost(t, AcceptAll, false)
	in := newTestInbox(t, h, clock.Real{})
	in.cfg.ManifestBudget = 320 * ManifestFileCost
	var re *RefusedError
	if err := in.Offer("d1", make(Files, 321), ""); !errors.As(err, &re) || re.Code != errcode.CodeTooLarge ||
		!errors.Is(err, errcode.ErrTooLarge) || !strings.Contains(err.Error(), "Anna takes file lists of at most 10 KB in one transfer") {
		t.Errorf("an offer over the budget: %v", err)
	}
	for _, c := range []struct {
		text string
		want error
	}{
		{strings.Repeat("x", MaxTextLen+1), errcode.ErrTooLarge},
		{"bad \xfe", errcode.ErrProtocol},
		{"", errcode.ErrProtocol}, // neither a file nor a text
	} {
		in := newTestInbox(t, h, clock.Real{})
		if err := in.Offer("d1", nil, c.text); !errors.Is(err, c.want) {
			t.Errorf("text of %d bytes: %v, want %v", len(c.text), err, c.want)
		}
	}
	if err := in.Offer("no spaces allowed", nil, "hi"); !errors.Is(err, errcode.ErrProtocol) {
		t.Errorf("a bad delivery ID: %v", err)
	}
}

// A prompt nobody answers expires on the inbox's clock.
func TestInboxPromptExpires(t *testing.T) {
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newFakeHost(t, AcceptAsk, false)
	in := newTestInbox(t, h, clk)
	if err := in.Offer("d1", Files{{Path: "a", Size: 1}}, ""); err != nil {
		t.Fatal(err)
	}
	got := make(chan Verdict, 1)
	go func() {
		v, _ := in.Decide(t.Context())
		got <- v
	}()
	if err := clk.WaitTimers(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if p := h.asked[0]; !p.Expires.Equal(clk.Now().Add(2*time.Minute)) || p.Count != 1 || p.TotalBytes != 1 {
		t.Errorf("prompt %+v", p)
	}
	clk.Advance(2 * time.Minute)
	v := <-got
	if v.Accept || v.Code != errcode.CodeExpired || !errors.Is(v.Err(), errcode.ErrExpired) {
		t.Errorf("verdict %+v", v)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.asking {
		t.Error("still asking after the prompt expired")
	}
}

// A decline counts against the peer; a declined offer's result says what
// was offered.
func TestInboxDeclined(t *testing.T) {
	h := newFakeHost(t, AcceptAsk, false)
	h.answers <- Decision{Reason: "not now"}
	in := newTestInbox(t, h, clock.Real{})
	if err := in.Offer("d1", Files{{Path: "a", Size: 5}, {Path: "b", Size: 6}}, ""); err != nil {
		t.Fatal(err)
	}
	v, err := in.Decide(t.Context())
	if err != nil || v.Accept || v.Code != errcode.CodeDeclined {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	in.Finish(v.Err(), false, Result{})
	if r := h.result; r.State != StateDeclined || r.Text != "" || r.Files != 2 || r.TotalBytes != 11 || r.Err != "Declined by you." {
		t.Errorf("result %+v", r)
	}
}

var deliveryIDCases = []struct {
	id string
	ok bool
}{
	{"0123456789abcdef01234567", true},
	{"t1", true},
	{"A-b_9", true},
	{strings.Repeat("a", MaxDeliveryID), true},
	{"", false},
	{strings.Repeat("a", MaxDeliveryID+1), false},
	{"../etc", false},
	{"a b", false},
	{"a\x00b", false},
	{"ü", false},
	{"a\nb", false},
	{"r-1;DROP", false},
}

func TestCheckDelivery(t *testing.T) {
	for _, c := range deliveryIDCases {
		err := CheckDelivery(c.id)
		if (err == nil) != c.ok {
			t.Errorf("CheckDelivery(%q) = %v, want ok=%v", c.id, err, c.ok)
		}
		if err != nil && !errors.Is(err, errcode.ErrProtocol) {
			t.Errorf("CheckDelivery(%q) = %v, not a protocol error", c.id, err)
		}
	}
}

// FuzzCheckDelivery: a delivery ID from a peer is either refused as a
// protocol error or safe to show, log and store as it is.
func FuzzCheckDelivery(f *testing.F) {
	for _, c := range deliveryIDCases {
		f.Add(c.id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := CheckDelivery(id)
		if err != nil {
			if !errors.Is(err, errcode.ErrProtocol) {
				t.Fatalf("%q: %v", id, err)
			}
			return
		}
		if id == "" || len(id) > MaxDeliveryID || strings.ContainsFunc(id, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_')
		}) {
			t.Fatalf("%q accepted", id)
		}
	})
}

// countingList counts the passes over a list.
type countingList struct {
	Files
	passes int
}

func (l *countingList) Each(f func(i int, e OfferedFile) error) error {
	l.passes++
	return l.Files.Each(f)
}

// An offer's names are read once, in order: the name checks and the
// duplicates' hashes share the pass (a spilled list is read from disk).
func TestInboxOfferReadsTheListOnce(t *testing.T) {
	h := newFakeHost(t, AcceptAll, false)
	in := newTestInbox(t, h, clock.Real{})
	files := Files{{Path: "d"}, {Path: "b/../c"}}
	for range MaxSameName + 1 {
		files = append(files, OfferedFile{Path: "a"})
	}
	l := &countingList{Files: files}
	if err := in.Offer("d1", l, ""); err != nil {
		t.Fatal(err)
	}
	if l.passes != 1 {
		t.Errorf("the list was read %d times", l.passes)
	}
	if last := len(files) - 1; !in.IsRefused(1) || !in.IsRefused(last) || len(in.Refused) != 2 {
		t.Errorf("refused %+v, want files 1 (its name) and %d (one copy too many)", in.Refused, last)
	}
}

// Spellings of one name that are one name where they are saved count as
// copies of it: on a file system that ignores case (Windows's, a Mac's,
// a vfat stick) "report.pdf" and "REPORT.pdf" clash and the later one is
// numbered, trying each number before it, as a Mac's decomposed "café"
// clashes with a composed one; a peer's million case spellings of one
// name cost as much as its million copies, and none was refused.
func TestInboxCountsSpellingsOfANameAsCopies(t *testing.T) {
	h := newFakeHost(t, AcceptAll, false)
	in := newTestInbox(t, h, clock.Real{})
	files := Files{{Path: "cafe\u0301.txt", Size: 1}}
	for i := range MaxSameName + 1 {
		name := []byte("report.pdf")
		for b := range 6 {
			if i&(1<<b) != 0 {
				name[b] -= 'a' - 'A'
			}
		}
		files = append(files, OfferedFile{Path: string(name), Size: 2})
	}
	for range MaxSameName {
		files = append(files, OfferedFile{Path: "caf\u00e9.txt", Size: 1})
	}
	if err := in.Offer("d1", files, ""); err != nil {
		t.Fatal(err)
	}
	if len(in.Refused) != 2 || !in.IsRefused(MaxSameName+1) || !in.IsRefused(len(files)-1) {
		t.Fatalf("refused %+v, want files %d and %d, the 17th spelling of each name", in.Refused, MaxSameName+1, len(files)-1)
	}
}

// A name an offer has several times is received each time (the later ones
// numbered where they are saved), up to MaxSameName; the copies beyond are
// refused, each, with the reason.
func TestInboxTakesANameUpToMaxSameNameTimes(t *testing.T) {
	h := newFakeHost(t, AcceptAll, false)
	in := newTestInbox(t, h, clock.Real{})
	files := Files{{Path: "a.txt", Size: 1}}
	for range MaxSameName + 2 {
		files = append(files, OfferedFile{Path: "report.pdf", Size: 2})
	}
	if err := in.Offer("d1", files, ""); err != nil {
		t.Fatal(err)
	}
	if len(in.Refused) != 2 || !in.IsRefused(len(files)-2) || !in.IsRefused(len(files)-1) ||
		in.Refused[0].Reason != fmt.Sprintf("the offer names this file more than %d times", MaxSameName) {
		t.Fatalf("refused %+v, want the last two", in.Refused)
	}
	if v, err := in.Decide(t.Context()); err != nil || !v.Accept || len(in.Accepted) != 1+MaxSameName {
		t.Fatalf("verdict %+v, %v; accepted %d, want %d", v, err, len(in.Accepted), 1+MaxSameName)
	}
	in.Dest.Close()
}

// A download folder files cannot be made in (mounted read-only, or one
// this user may not write in since it was chosen) refuses the offer whole
// before anyone is asked, in one sentence to each side, where it was
// accepted and every file failed once its bytes had crossed. A folder
// chosen at the prompt is checked too.
func TestInboxRefusesAnOfferToAFolderThatCannotBeWritten(t *testing.T) {
	ro := t.TempDir()
	newInbox := func(h *fakeHost) *Inbox {
		a := NewAdmission(4, DefaultMuteDeclined, DefaultManifestBudget, time.Now)
		tk, refused := a.Arrive("192.0.2.1:1000", bob, func() {})
		if refused != nil {
			t.Fatal(refused)
		}
		t.Cleanup(tk.End)
		return NewInbox(h, bob, tk, InboxConfig{ManifestBudget: DefaultManifestBudget, PromptTimeout: time.Minute, Clock: clock.Real{},
			Writable: func(dir string) error {
				if dir == ro {
					return fmt.Errorf("%w (%w)", store.ErrNotWritable, syscall.EROFS)
				}
				return nil
			}})
	}
	files := Files{{Path: "a.txt", Size: 1}, {Path: "b.txt", Size: 2}}

	h := newFakeHost(t, AcceptAsk, false)
	h.dir = ro
	in := newInbox(h)
	if err := in.Offer("d1", files, ""); err != nil {
		t.Fatal(err)
	}
	v, err := in.Decide(t.Context())
	if err != nil || v.Accept || h.prompts() != 0 {
		t.Fatalf("verdict %+v, %v; asked %d times", v, err, h.prompts())
	}
	const peerWords = "none of the 2 files could be saved: the download folder cannot be written (read-only file system)"
	if v.Code != errcode.CodeVerifyFailed || v.Reason != peerWords {
		t.Errorf("the sender is told %s: %q", v.Code, v.Reason)
	}
	if got := EndOf(&errcode.RemoteError{Code: v.Code, Reason: v.Reason}, "Anna", false); got.State != StateFailed ||
		got.Text != "On Anna, "+peerWords+"." || Retryable(&errcode.RemoteError{Code: v.Code, Reason: v.Reason}) {
		t.Errorf("the sender reads %+v", got)
	}
	here := "None of the 2 files could be saved here: the download folder " + ro + " cannot be written (read-only file system)."
	if got := EndOf(v.Err(), "Bob", false); got.Text != here || !errors.Is(v.Err(), errcode.ErrVerifyFailed) {
		t.Errorf("this device reads %+v", got)
	}

	// Another folder: asked; the read-only one chosen at the prompt: refused.
	h = newFakeHost(t, AcceptAsk, false)
	h.answers <- Decision{Accept: true, Dest: ro}
	in = newInbox(h)
	if err := in.Offer("d2", files, ""); err != nil {
		t.Fatal(err)
	}
	v, err = in.Decide(t.Context())
	if err != nil || v.Accept || v.Reason != peerWords || in.Dest != nil {
		t.Fatalf("verdict %+v, %v; destination %v", v, err, in.Dest)
	}
}

// An offer with more files over the download folder's limit than one
// decision can refuse by name (MaxRefusals) is refused whole in the
// limit's words on both sides, not as a want of space ("Not enough space
// on Bob: over 1000 of the offered files cannot be stored on Anna"), which
// freeing some would not mend. The code stays no_space, which every Ferry
// knows.
func TestInboxRefusesTooManyFilesOverTheLimitInItsWords(t *testing.T) {
	fat := t.TempDir()
	offer := func(files Files) Verdict {
		t.Helper()
		h := newFakeHost(t, AcceptAsk, false)
		h.dir = fat
		in := newTestInbox(t, h, clock.Real{})
		in.cfg.FileLimit = func(string) store.FileLimit { return store.FileLimit{Max: store.FATMax, FS: "FAT32"} }
		if err := in.Offer("d1", files, ""); err != nil {
			t.Fatal(err)
		}
		v, err := in.Decide(t.Context())
		if err != nil || v.Accept || v.Code != errcode.CodeNoSpace || h.prompts() != 0 {
			t.Fatalf("verdict %+v, %v; asked %d times", v, err, h.prompts())
		}
		return v
	}
	var files Files
	for i := range MaxRefusals + 1 {
		files = append(files, OfferedFile{Path: fmt.Sprintf("film%d.mkv", i), Size: 5 << 30})
	}
	const limit = "the download folder is on a FAT32 drive, which holds files of up to 4.3 GB"
	v := offer(append(slices.Clone(files), OfferedFile{Path: "notes.txt", Size: 2}))
	want := "1001 of the offered files (over the 1000 one offer may leave out): " + limit + "; send the others without them"
	if v.Reason != want {
		t.Errorf("reason %q, want %q", v.Reason, want)
	}
	if e := EndOf(&errcode.RemoteError{Code: v.Code, Reason: v.Reason}, "Anna", false); e.State != StateDeclined || e.Text != "Anna cannot take "+want+"." {
		t.Errorf("the sender reads %+v", e)
	}
	if e := EndOf(v.Err(), "Bob", false); e.Text != "This device cannot take "+want+"." {
		t.Errorf("the receiver reads %+v", e)
	}

	// With names refused too; every file refused: no others to send.
	files[0].Path, files[1].Path = "../a", "../b"
	v = offer(files)
	if want := "999 of the offered files (with 2 names it cannot store, over the 1000 one offer may leave out): " + limit; v.Reason != want {
		t.Errorf("reason %q, want %q", v.Reason, want)
	}
}
