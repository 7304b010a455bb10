package engine

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/wire"
)

// rawReceiver is a scripted receiver that lies to a real sender.
type rawReceiver struct {
	t    *testing.T
	conn *pipeConn
	ctl  *control
	// features are what its hello lists.
	features []string
	// offer and files are what the sender offered.
	offer *wire.Offer
	files []wire.FileEntry
}

// greet accepts the sender's control stream, answers its hello and reads the offer.
func (r *rawReceiver) greet(id *identity.Identity) error {
	s, err := r.conn.AcceptStream(context.Background())
	if err != nil {
		return err
	}
	if k, err := wire.ReadKind(s); err != nil || k != wire.KindControl {
		return errors.New("no control stream")
	}
	r.ctl = newControl(s)
	if _, err := expect[*wire.Hello](r.ctl.recvTimeout(5 * time.Second)); err != nil {
		return err
	}
	if err := r.ctl.send(&wire.Hello{Version: wire.Version, Name: "liar", ID: id.ID.String(), Features: r.features}); err != nil {
		return err
	}
	if r.offer, err = expect[*wire.Offer](r.ctl.recvTimeout(5 * time.Second)); err != nil {
		return err
	}
	for len(r.files) < r.offer.Files {
		part, err := expect[*wire.OfferFiles](r.ctl.recvTimeout(5 * time.Second))
		if err != nil {
			return err
		}
		r.files = append(r.files, part.Files...)
	}
	return nil
}

// drainData reads and drops whatever the sender writes on data streams.
func (r *rawReceiver) drainData() {
	for {
		s, err := r.conn.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go func() {
			var b [64 << 10]byte
			for {
				if _, err := s.Read(b[:]); err != nil {
					return
				}
			}
		}()
	}
}

// liarSetup is what a real sender facing a liar is built from: the
// sending engine, the liar's identity and the files offered. Building it
// takes most of a run (an engine, a key, files written and listed), so
// FuzzSenderControl builds it once per worker and runs each input on it.
type liarSetup struct {
	send  *Engine
	liar  *identity.Identity
	files []localFile
}

// newLiarSetup builds a sender that offers two files of 3 chunks each.
func newLiarSetup(tb testing.TB) *liarSetup {
	tb.Helper()
	send := testEngine(tb, Options{ChunkSize: 4096})
	liar, err := identity.LoadOrCreate(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	src := tb.TempDir()
	writeFile(tb, filepath.Join(src, "d", "a.bin"), 3*4096)
	writeFile(tb, filepath.Join(src, "d", "b.bin"), 3*4096)
	files, err := buildManifest([]string{filepath.Join(src, "d")})
	if err != nil {
		tb.Fatal(err)
	}
	return &liarSetup{send: send, liar: liar, files: files}
}

// againstLiar runs a real sender (two files of 3 chunks each) against script,
// whose hello lists features, and returns the session's error and what the
// sender verified.
func againstLiar(t *testing.T, features []string, script func(r *rawReceiver)) (error, int64) {
	t.Helper()
	return newLiarSetup(t).run(t, features, script)
}

// run is one session of l's sender against script (againstLiar).
func (l *liarSetup) run(t *testing.T, features []string, script func(r *rawReceiver)) (error, int64) {
	t.Helper()
	cli, srv := newPipeConns(l.send.ident.ID, l.liar.ID)
	r := &rawReceiver{t: t, conn: srv, features: features}
	scripted := make(chan struct{})
	go func() {
		defer close(scripted)
		if err := r.greet(l.liar); err != nil {
			return
		}
		script(r)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := &Transfer{id: "liar", dir: Sending, done: make(chan struct{}), started: time.Now()}
	tx := &sender{e: l.send, t: tr, files: slices.Clone(l.files), chunkSize: 4096}
	err := tx.session(ctx, cli, "test", "", SendOptions{Streams: 2})
	if ctx.Err() != nil {
		t.Fatal("the sender did not end the session by itself")
	}
	cli.Close(nil)
	<-scripted
	return err, tx.verified.Load()
}

// hostileReceivers are scripted receivers that break the rules, as the
// messages they answer with (after a well-formed hello); each must make the
// real sender end with a protocol error that names the lie. The cases double
// as FuzzSenderControl's corpus.
var hostileReceivers = []struct {
	name string
	msgs []wire.Message
	want string
}{
	{"have for a file not offered", []wire.Message{&wire.Have{File: 7, Chunks: []byte{1}}}, "resume data for file 7"},
	{"have bitmap of the wrong size", []wire.Message{&wire.Have{File: 0, Chunks: []byte{1, 2, 3}}}, "resume bitmap"},
	{"two haves for one file", []wire.Message{&wire.Have{File: 0, Chunks: []byte{1}}, &wire.Have{File: 0, Chunks: []byte{1}}},
		"resume data for file 0"},
	{"accepts a file out of range", []wire.Message{&wire.Decision{Accept: true, Files: []uint32{0, 5}}}, "accepted file 5"},
	{"accepts a file twice", []wire.Message{&wire.Decision{Accept: true, Files: []uint32{1, 1}}}, "accepted file 1"},
	{"refuses a file out of range", []wire.Message{&wire.Decision{Accept: true, Refused: []wire.Refusal{{File: 9, Code: wire.CodeBadName}}}},
		"refused file 9"},
	{"refuses and accepts one file", []wire.Message{&wire.Decision{Accept: true, Files: []uint32{0}, Refused: []wire.Refusal{{File: 0, Code: wire.CodeBadName}}}},
		"accepted file 0"},
	{"asks again for a file not accepted", []wire.Message{&wire.Decision{Accept: true, Files: []uint32{0}}, &wire.NeedChunk{File: 1, Chunk: 0}},
		"re-request of chunk 0 of file 1"},
	{"asks again for a chunk beyond the file", []wire.Message{&wire.Decision{Accept: true}, &wire.NeedChunk{File: 0, Chunk: 3}},
		"re-request of chunk 3"},
	{"asks again without end", append([]wire.Message{&wire.Decision{Accept: true}}, repeat(&wire.NeedChunk{File: 0, Chunk: 1}, 100)...),
		"asked for chunk 1 of file 0 4 times"},
	{"result for a file not being sent", []wire.Message{&wire.Decision{Accept: true, Files: []uint32{0}}, &wire.FileResult{File: 1, OK: true}},
		"result for file 1"},
	{"two results for one file", []wire.Message{&wire.Decision{Accept: true}, &wire.FileResult{File: 0, OK: true}, &wire.FileResult{File: 0, OK: true}},
		"a second result for file 0"},
	{"success without file results", []wire.Message{&wire.Decision{Accept: true}, &wire.Result{OK: true, Files: 2, Verified: 2}},
		"verified 0 of 2"},
	{"success with a failed file", []wire.Message{&wire.Decision{Accept: true}, &wire.FileResult{File: 0, OK: true},
		&wire.FileResult{File: 1, OK: false, Code: wire.CodeIO}, &wire.Result{OK: true, Files: 2, Verified: 2}}, "verified 1 of 2"},
	{"a message out of place", []wire.Message{&wire.Decision{Accept: true}, &wire.Offer{Transfer: "x", ChunkSize: 4096}}, "unexpected offer"},
	{"offer instead of a decision", []wire.Message{&wire.Offer{Transfer: "x", ChunkSize: 4096}}, "expected a decision"},
	{"prompt it did not say it sends", []wire.Message{&wire.Prompt{Shown: true}, &wire.Decision{Accept: true}},
		"got prompt from a receiver that did not say it sends them"},
	{"prompt after the decision", []wire.Message{&wire.Decision{Accept: true}, &wire.Prompt{Shown: true}}, "unexpected prompt"},
	{"names files held, not saying it does", []wire.Message{&wire.Decision{Accept: true, Same: []byte{1}}},
		"a decision naming files held, from a receiver that did not say"},
	{"leaves it did not say it sends", []wire.Message{&wire.Decision{Accept: true}, &wire.Same{File: 0, Leaves: make([]byte, 32), Done: true}},
		"leaves of file 0, which the receiver did not say it holds"},
}

// hostileSamers are hostileReceivers whose hello lists wire.FeatureSame:
// they name files they hold, and send their leaves, wrongly. They seed
// FuzzSenderControl too.
var hostileSamers = []struct {
	name string
	msgs []wire.Message
	want string
}{
	{"holds a file not offered", []wire.Message{&wire.Decision{Accept: true, Same: []byte{0x04}}}, "holds file 2, which it did not accept whole"},
	{"holds a file not accepted", []wire.Message{&wire.Decision{Accept: true, Files: []uint32{0}, Same: []byte{0x02}}},
		"holds file 1, which it did not accept whole"},
	{"holds part of a file and all of it", []wire.Message{&wire.Have{File: 0, Chunks: []byte{1}}, &wire.Decision{Accept: true, Same: []byte{1}}},
		"holds file 0, which it did not accept whole"},
	{"a bitmap longer than the offer", []wire.Message{&wire.Decision{Accept: true, Same: []byte{1, 0}}}, "a same bitmap of 2 bytes for 2 files"},
	{"leaves of a file it did not name", []wire.Message{&wire.Decision{Accept: true, Same: []byte{1}}, &wire.Same{File: 1, Leaves: make([]byte, 32), Done: true}},
		"leaves of file 1, which the receiver did not say it holds"},
	{"leaves out of order", []wire.Message{&wire.Decision{Accept: true, Same: []byte{1}}, &wire.Same{File: 0, Start: 1, Leaves: make([]byte, 32)}},
		"leaves 1 to 2 of file 0, after 0 of its 3"},
	{"leaves beyond the file", []wire.Message{&wire.Decision{Accept: true, Same: []byte{1}}, &wire.Same{File: 0, Leaves: make([]byte, 4*32)}},
		"leaves 0 to 4 of file 0, after 0 of its 3"},
	{"leaves after it was done", []wire.Message{&wire.Decision{Accept: true, Same: []byte{1}}, &wire.Same{File: 0, Done: true}, &wire.Same{File: 0, Leaves: make([]byte, 32)}},
		"or said it was done with"},
}

// hostilePrompters are hostileReceivers whose hello lists
// wire.FeaturePrompt; they seed FuzzSenderControl too.
var hostilePrompters = []struct {
	name string
	msgs []wire.Message
	want string
}{
	{"prompt without end", append(repeat(&wire.Prompt{Shown: true}, 5), repeat(&wire.Prompt{}, 100)...),
		"9 prompt messages about one offer, at most 8"},
	{"prompt after the decision", []wire.Message{&wire.Prompt{}, &wire.Decision{Accept: true}, &wire.Prompt{Shown: true}}, "unexpected prompt"},
	{"queue that never moves", repeat(&wire.Prompt{Ahead: wire.MaxPromptAhead}, 10), "9 prompt messages about one offer, at most 8"},
	{"queue that moves back and forth", slices.Concat(repeat(&wire.Prompt{Ahead: 5}, 1), slices.Repeat([]wire.Message{&wire.Prompt{Ahead: 6}, &wire.Prompt{Ahead: 5}}, 50)),
		"9 prompt messages about one offer, at most 8"},
	{"queue that moves up all the way, then without end", slices.Concat(queueMovingUp(wire.MaxPromptAhead), repeat(&wire.Prompt{}, 100)),
		"9 prompt messages about one offer, at most 8"},
}

// queueMovingUp is what a receiver says of an offer its own queue holds
// behind from offers, as each before it gets its turn.
func queueMovingUp(from int) []wire.Message {
	var out []wire.Message
	for ahead := from; ahead > 0; ahead-- {
		out = append(out, &wire.Prompt{Ahead: ahead})
	}
	return out
}

// TestSenderFollowsAQueueMovingUp: a receiver tells an offer its queue
// holds its place each time it moves up (one before it answered,
// withdrawn or expired), which a queue of 32 offers behind 8 prompts does
// 40 times. The sender counted each against the 8 prompt messages one
// offer may bring, and ended the 9th with a protocol error: a place told
// lower than any before is not counted (wire.MaxPromptAhead bounds them).
func TestSenderFollowsAQueueMovingUp(t *testing.T) {
	said := slices.Concat(queueMovingUp(40), []wire.Message{&wire.Prompt{}, &wire.Prompt{Shown: true},
		&wire.Decision{Accept: false, Code: wire.CodeDeclined, Reason: "not now"}})
	err, _ := againstLiar(t, []string{wire.FeaturePrompt}, func(r *rawReceiver) { r.answer(encode(said...)) })
	if !errors.Is(err, wire.ErrDeclined) {
		t.Fatalf("the sender ended with %v; want the receiver's decline", err)
	}
}

func repeat(m wire.Message, n int) []wire.Message {
	out := make([]wire.Message, n)
	for i := range out {
		out[i] = m
	}
	return out
}

// answer writes raw control bytes, then keeps reading both the control
// stream and the data streams, as a receiver that listens but lies would.
func (r *rawReceiver) answer(raw []byte) {
	go r.drainData()
	r.ctl.s.Write(raw)
	for {
		if _, err := r.ctl.recv(); err != nil {
			return
		}
	}
}

func TestHostileReceivers(t *testing.T) {
	type hostile struct {
		name     string
		features []string
		msgs     []wire.Message
		want     string
	}
	var cases []hostile
	for _, c := range hostileReceivers {
		cases = append(cases, hostile{c.name, nil, c.msgs, c.want})
	}
	for _, c := range hostilePrompters {
		cases = append(cases, hostile{"feature prompt: " + c.name, []string{wire.FeaturePrompt}, c.msgs, c.want})
	}
	for _, c := range hostileSamers {
		cases = append(cases, hostile{"feature same: " + c.name, []string{wire.FeatureSame}, c.msgs, c.want})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err, verified := againstLiar(t, c.features, func(r *rawReceiver) { r.answer(encode(c.msgs...)) })
			if !errors.Is(err, wire.ErrProtocol) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("sender ended with %v; want a protocol error mentioning %q", err, c.want)
			}
			// No more files count as verified than results said so.
			var oks int64
			for _, m := range c.msgs {
				if fr, ok := m.(*wire.FileResult); ok && fr.OK {
					oks++
				}
			}
			if verified > min(oks, 2) {
				t.Errorf("the sender counted %d verified files", verified)
			}
		})
	}
}

// FuzzSenderControl feeds a real sender arbitrary bytes as the receiver's
// answers (after a well-formed hello), then hangs up: the sender never
// panics and ends by itself.
func FuzzSenderControl(f *testing.F) {
	for _, c := range hostileReceivers {
		f.Add(encode(c.msgs...))
	}
	for _, c := range hostilePrompters {
		f.Add(encode(c.msgs...))
	}
	for _, c := range hostileSamers {
		f.Add(encode(c.msgs...))
	}
	f.Add(encode(&wire.Decision{Accept: true, Same: []byte{3}}, &wire.Same{File: 1, Leaves: make([]byte, 3*32), Done: true},
		&wire.Same{File: 0, Leaves: make([]byte, 32)}))
	f.Add(encode(&wire.Prompt{}, &wire.Prompt{Shown: true}, &wire.Decision{Accept: true}))
	f.Add(encode(&wire.Decision{Accept: false, Code: wire.CodeDeclined}))
	l := newLiarSetup(f)
	f.Fuzz(func(t *testing.T, answers []byte) {
		if len(answers) > 1<<16 {
			return
		}
		l.run(t, []string{wire.FeaturePrompt, wire.FeatureSame}, func(r *rawReceiver) {
			go r.drainData()
			r.ctl.s.Write(answers)
			r.ctl.s.Close() // and hang up
			for {
				if _, err := r.ctl.recv(); err != nil {
					return
				}
			}
		})
	})
}
