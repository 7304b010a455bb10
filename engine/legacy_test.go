package engine

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferrydrop/ferry/engine/identity"
	"github.com/ferrydrop/ferry/engine/internal/rendezvous"
	"github.com/ferrydrop/ferry/engine/internal/resume"
	"github.com/ferrydrop/ferry/engine/peer"
	"github.com/ferrydrop/ferry/internal/testutil"
)

// testdata/legacy-config holds config dirs written by Ferry before peers
// had kinds (see its README): a receiver that paired with a sender, took a
// small file and holds half of an interrupted one, and that sender.
const (
	legacyDir      = "testdata/legacy-config"
	legacyReceiver = "CUSI67W4PGGLISFHIXAEWOHM6JZMWPRUT2M64XYZ6CJS5DSG5OMQ"
	legacySender   = "RACKTHZHY3KA3RBZJYWIMSSO2CQLTEOD6V7336775KNSJLGUIGSQ"
	// legacyDest is where the receiver's downloads were: its resume state
	// names that folder, and a moved folder is another download folder.
	legacyDest = "/tmp/legacygen/out/downloads"
	// The interrupted file: legacyPattern's bytes, with the modification
	// time it had (the offer names it).
	legacySize  = 4 << 20
	legacyMTime = 1796159984315761125
	legacyChunk = 64 << 10
)

func legacyPattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/4096)
	}
	return b
}

// copyTree copies the files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A config dir written by the Ferry of before loads unchanged: the same
// identities, the paired device trusted, the unfinished transfer listed,
// and a send of the same file resumes it instead of starting over.
func TestLegacyConfigLoads(t *testing.T) {
	root := t.TempDir()
	copyTree(t, legacyDir, root)
	recvDir, sendDir, dl := filepath.Join(root, "receiver"), filepath.Join(root, "sender"), filepath.Join(root, "downloads")
	// The one thing moving the fixture changes: the download folder's path.
	states, _ := filepath.Glob(filepath.Join(recvDir, "resume", "*.json"))
	if len(states) != 1 {
		t.Fatalf("resume states in the fixture: %v", states)
	}
	st, err := os.ReadFile(states[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(states[0], bytes.ReplaceAll(st, []byte(legacyDest), []byte(dl)), 0o600); err != nil {
		t.Fatal(err)
	}

	// And the file's change time: a copy cannot have the original's, and
	// one apart from its mtime counts in the offer's identity (manifestID),
	// as a file rewritten with its mtime set back has it. The state and the
	// sender's leaf cache are renamed for the copy's identity; their
	// contents stay as written.
	src := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(src, legacyPattern(legacySize), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(0, legacyMTime)
	if err := os.Chtimes(src, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	rekeyLegacy(t, recvDir, sendDir, src)

	recv := startReceiver(t, Options{ConfigDir: recvDir, DownloadDir: dl, Accept: AcceptTrusted, MaxPartialAge: -1})
	send := testEngine(t, Options{ConfigDir: sendDir, ChunkSize: legacyChunk})
	if recv.ID() != legacyReceiver || send.ID() != legacySender {
		t.Fatalf("identities: receiver %s, sender %s", recv.ID(), send.ID())
	}
	var found bool
	for _, p := range recv.Trusted() {
		if p.ID == legacySender {
			found = p.Paired && p.AlwaysAccept && p.Name == "legacy-sender"
		}
	}
	if !found {
		t.Fatalf("the paired sender is not trusted: %+v", recv.Trusted())
	}
	parts := recv.Partials()
	if len(parts) != 1 || parts[0].PeerID != legacySender || parts[0].Bytes == 0 {
		t.Fatalf("partials: %+v", parts)
	}
	held := parts[0].Bytes

	to := target(recv)
	to.ID = legacyReceiver
	res := sendWait(t, send, to, []string{src}, SendOptions{Transport: "quic"})
	if res.State != StateDone || res.Verified != 1 {
		t.Fatalf("send: %s %q", res.State, res.Err)
	}
	if res.Bytes > legacySize-held+legacyChunk*4 {
		t.Fatalf("sent %d bytes of %d although the receiver held %d: the transfer did not resume", res.Bytes, legacySize, held)
	}
	t.Logf("sent %d of %d bytes; the receiver held %d", res.Bytes, legacySize, held)
	got, err := os.ReadFile(filepath.Join(dl, "big.bin"))
	if err != nil || !bytes.Equal(got, legacyPattern(legacySize)) {
		t.Fatalf("received file differs (%v)", err)
	}
	// The receiver drops the transfer's resume state when its session ends,
	// just after the sender has its result.
	testutil.WaitFor(t, "no partials left after the resumed transfer", func() bool { return len(recv.Partials()) == 0 })

	// Paired before rendezvous secrets existed, the two devices agreed one
	// at this first contact (issue #29), and the next contact keeps it.
	rs, ss := legacyRendezvous(t, recv, send)
	if rs.IsZero() || rs != ss {
		t.Fatalf("after the first contact: receiver holds %v, sender %v; want one secret", rs.Fingerprint(), ss.Fingerprint())
	}
	small := filepath.Join(t.TempDir(), "small.txt")
	if err := os.WriteFile(small, []byte("again"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := sendWait(t, send, to, []string{small}, SendOptions{Transport: "quic"}); res.State != StateDone {
		t.Fatalf("second send: %s %q", res.State, res.Err)
	}
	rs2, ss2 := legacyRendezvous(t, recv, send)
	if rs2 != rs || ss2 != ss {
		t.Fatalf("the second contact changed the secret: receiver %v -> %v, sender %v -> %v",
			rs.Fingerprint(), rs2.Fingerprint(), ss.Fingerprint(), ss2.Fingerprint())
	}
}

// rekeyLegacy renames the fixture's resume state and leaf cache from the
// offer of the original file to the offer of src, its copy.
func rekeyLegacy(t *testing.T, recvDir, sendDir, src string) {
	t.Helper()
	files, err := buildManifest([]string{src})
	if err != nil {
		t.Fatal(err)
	}
	id := manifestID(files, nil, legacyChunk, "")
	states, _ := filepath.Glob(filepath.Join(recvDir, "resume", "*.json"))
	caches, _ := filepath.Glob(filepath.Join(sendDir, "resume", "send-*.log"))
	if len(states) != 1 || len(caches) != 1 {
		t.Fatalf("resume states %v, leaf caches %v", states, caches)
	}
	old := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(caches[0]), "send-"), ".log")
	if id == old {
		return // a file system whose change times are its mtimes (or none)
	}
	st, err := os.ReadFile(states[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(st, []byte(old)) {
		t.Fatalf("the state is not of the offer %s", old)
	}
	if err := os.WriteFile(states[0], bytes.ReplaceAll(st, []byte(old), []byte(id)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(states[0], filepath.Join(filepath.Dir(states[0]), resume.Key(legacySender, id)+".json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(caches[0], filepath.Join(filepath.Dir(caches[0]), "send-"+id+".log")); err != nil {
		t.Fatal(err)
	}
}

// legacyRendezvous is the rendezvous secret each legacy device holds for
// the other.
func legacyRendezvous(t *testing.T, recv, send *Engine) (rendezvous.Secret, rendezvous.Secret) {
	t.Helper()
	sid, err := peer.Parse(legacySender)
	if err != nil {
		t.Fatal(err)
	}
	rid, err := peer.Parse(legacyReceiver)
	if err != nil {
		t.Fatal(err)
	}
	return recv.rendezvousOf(sid), send.rendezvousOf(rid)
}

// A LocalSend device is trusted and forgotten by its ID like a Ferry one;
// a peer that proved no key cannot be trusted.
func TestTrustByPeerKind(t *testing.T) {
	e := testEngine(t, Options{})
	ls := "localsend:" + strings.Repeat("AB", 32)
	if err := e.SetTrusted(ls, true); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range e.Trusted() {
		found = found || p.ID == ls && p.AlwaysAccept
	}
	if !found {
		t.Fatalf("the LocalSend device is not trusted: %+v", e.Trusted())
	}
	pid, err := peer.Parse(ls)
	if err != nil || !e.isTrusted(pid) {
		t.Fatalf("isTrusted(%v) false (%v)", pid, err)
	}
	if err := e.SetTrusted("anon:192.0.2.9:4000", true); !errors.Is(err, identity.ErrNotProven) {
		t.Fatalf("trusting an anonymous peer: %v", err)
	}
	if e.isTrusted(peer.Anonymous("192.0.2.9:4000")) {
		t.Fatal("an anonymous peer is trusted")
	}
	if err := e.Forget(ls); err != nil {
		t.Fatal(err)
	}
	if len(e.Trusted()) != 0 {
		t.Fatalf("after Forget: %+v", e.Trusted())
	}
	if err := e.SetTrusted("bluetooth:1", true); !errors.Is(err, peer.ErrBadID) {
		t.Fatalf("an unknown kind: %v", err)
	}
}

// TestUnfinishedSendOfBeforeChangeTimesResumes: a transfer that a Ferry of
// before change times counted in the offer's identity (46e1bc5) left
// unfinished resumes after the upgrade, where its file's change time is
// apart from its mtime (a file from a tar archive, cp -p, rsync -t, or
// this copy of the fixture's file, its mtime set): the new sender offers
// it under the ID it had, which the receiver's resume state and the
// sender's leaf cache are under. Under the new ID it was another offer:
// ferry-cli of 2026-12-04 killed mid-send of 1500 files and a 150 MB file
// (touch -d), then the current one, sent all 180.0 MB again and saved the
// 765 files saved before a second time as "name (1)". The fixture is
// testdata/legacy-config, as the Ferry of 2026-12-01 wrote it; unlike
// TestLegacyConfigLoads, nothing in it is renamed. A file changed after
// that Ferry last wrote its cache is another offer still.
func TestUnfinishedSendOfBeforeChangeTimesResumes(t *testing.T) {
	// The file first, its mtime set: its change time is now, before the
	// fixture's leaf cache is written (as the older sender wrote it during
	// its attempt, after the file last changed).
	src := filepath.Join(t.TempDir(), "big.bin")
	if err := os.WriteFile(src, legacyPattern(legacySize), 0o600); err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(0, legacyMTime)
	if err := os.Chtimes(src, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	files, err := buildManifest([]string{src})
	if err != nil {
		t.Fatal(err)
	}
	if files[0].ctime == 0 || files[0].ctime == files[0].MTime {
		t.Skip("this file system's change times are its mtimes (or it has none): the IDs do not differ")
	}
	root := t.TempDir()
	copyTree(t, legacyDir, root)
	recvDir, sendDir, dl := filepath.Join(root, "receiver"), filepath.Join(root, "sender"), filepath.Join(root, "downloads")
	states, _ := filepath.Glob(filepath.Join(recvDir, "resume", "*.json"))
	if len(states) != 1 {
		t.Fatalf("resume states in the fixture: %v", states)
	}
	st, err := os.ReadFile(states[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(states[0], bytes.ReplaceAll(st, []byte(legacyDest), []byte(dl)), 0o600); err != nil {
		t.Fatal(err)
	}
	id := manifestID(files, nil, legacyChunk, "")
	old := manifestIDByMTime(files, nil, legacyChunk, "")
	if !bytes.Contains(st, []byte(old)) || id == old {
		t.Fatalf("the fixture's state is not of the offer %s (its new ID %s)", old, id)
	}
	d := resume.Open(filepath.Join(sendDir, "resume"), nil, nil)
	if got := begunBefore(d, id, files, nil, legacyChunk, ""); got != old {
		t.Fatalf("begunBefore = %q, want the fixture's offer %s", got, old)
	}

	recv := startReceiver(t, Options{ConfigDir: recvDir, DownloadDir: dl, Accept: AcceptTrusted, MaxPartialAge: -1})
	send := testEngine(t, Options{ConfigDir: sendDir, ChunkSize: legacyChunk})
	parts := recv.Partials()
	if len(parts) != 1 || parts[0].Bytes == 0 {
		t.Fatalf("partials: %+v", parts)
	}
	held := parts[0].Bytes
	to := target(recv)
	to.ID = legacyReceiver
	res := sendWait(t, send, to, []string{src}, SendOptions{Transport: "tcp"})
	if res.State != StateDone || res.Verified != 1 {
		t.Fatalf("send: %s %q", res.State, res.Err)
	}
	if res.Bytes > legacySize-held+legacyChunk*4 {
		t.Fatalf("sent %d bytes of %d although the receiver held %d: the transfer did not resume", res.Bytes, legacySize, held)
	}
	got, err := os.ReadFile(filepath.Join(dl, "big.bin"))
	if err != nil || !bytes.Equal(got, legacyPattern(legacySize)) {
		t.Fatalf("received file differs (%v)", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dl, "big (*")); len(m) != 0 {
		t.Fatalf("saved again as %v", m)
	}

	// A file changed after the older sender last wrote its cache is
	// another offer: its bytes are not the ones the receiver holds.
	cache, before := filepath.Join(sendDir, "resume", "send-"+old+".log"), time.Now().Add(-time.Hour)
	if err := os.WriteFile(cache, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(cache, before, before); err != nil {
		t.Fatal(err)
	}
	if got := begunBefore(d, id, files, nil, legacyChunk, ""); got != "" {
		t.Errorf("begunBefore = %q for a file changed after the older sender's cache; want none", got)
	}
}
