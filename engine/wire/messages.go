package wire

import (
	"fmt"
	"unicode/utf8"
)

// Hello is the first message on the control stream, in both directions.
type Hello struct {
	Version int    `json:"version"`
	Name    string `json:"name"`
	ID      string `json:"id"` // must equal the ID proven by TLS
	OS      string `json:"os,omitempty"`
	// Features lists optional capabilities (FeatureResume, FeatureText, and
	// "pair": the pairing step, where both screens show the same
	// verification code; see package engine/internal/pairing).
	Features []string `json:"features,omitempty"`
	// Pair is the pairing step's opening move, when both sides offer "pair":
	// in the dialer's hello the commitment to its nonce, in the listener's
	// hello its nonce (hex). A PairReveal from the dialer follows.
	Pair string `json:"pair,omitempty"`
	// Rendezvous, with FeatureRendezvous, is the fingerprint of the
	// rendezvous secret this side holds for the peer ("" for none; see
	// engine/internal/rendezvous). When the two differ, paired devices both
	// adopt the secret of this session's pairing step.
	Rendezvous string `json:"rendezvous,omitempty"`
	// DataStreams is how many data streams one session of this side's
	// accepts: the listener says it, and the dialer's sender opens no more.
	// 0 (absent: every Ferry before it) means LegacyDataStreams. Otherwise
	// it is at least LegacyDataStreams (no Ferry took fewer) and at most
	// MaxDataStreams.
	DataStreams int `json:"data_streams,omitempty"`
}

// Bounds of Hello.DataStreams.
const (
	// LegacyDataStreams is what a receiver that does not say takes: every
	// Ferry before Hello.DataStreams refuses the 33rd data stream of a session.
	LegacyDataStreams = 32
	// MaxDataStreams bounds what a peer may say: more would not fit a
	// session's connections (a TCP session holds at most 64).
	MaxDataStreams = 64
)

// PairReveal is the dialer's nonce, which its hello committed to. It comes
// right after the hellos when both offered "pair", before anything else.
type PairReveal struct {
	Nonce string `json:"nonce"` // hex
	// Only asks for pairing alone: no offer follows; each side tells the
	// other its user's verdict on the code (PairConfirm), and the session ends.
	Only bool `json:"only,omitempty"`
}

// PairConfirm tells the peer of a pairing-only session whether this side's
// user confirmed that both screens show the same code.
type PairConfirm struct {
	OK bool `json:"ok"`
}

// Offer opens a transfer; OfferFiles messages with the manifest follow.
type Offer struct {
	// Transfer is the delivery ID, chosen by the sender: the same in every
	// session of one delivery (reconnects, Retry), new for every send.
	// Letters, digits, '-' and '_', at most 64 bytes.
	Transfer   string `json:"transfer"`
	ChunkSize  int    `json:"chunk_size"`
	Files      int    `json:"files"`
	TotalBytes int64  `json:"total_bytes"`
	// Manifest identifies the offered file set (a hash of paths, sizes and
	// mtimes) so a receiver can recognise an offer it has partial data for.
	Manifest string `json:"manifest,omitempty"`
	// Text is the offer's text item (a message, a link, what was on the
	// clipboard): UTF-8, at most MaxTextLen bytes. It travels with the offer,
	// so the receiver's prompt can show it; nothing of it is written to disk
	// unless the receiving user chooses. Only sent to peers whose Hello
	// lists FeatureText.
	Text string `json:"text,omitempty"`
	// Folders counts the offer's empty folders: folders that hold no
	// offered file, which the files alone would not make on the receiver.
	// OfferFolders messages with their paths follow the manifest's files.
	// Only sent to peers whose Hello lists FeatureFolders.
	Folders int `json:"folders,omitempty"`
}

// FileEntry is one offered file.
type FileEntry struct {
	Path  string `json:"path"` // relative, slash-separated; validated by the receiver
	Size  int64  `json:"size"`
	Mode  uint32 `json:"mode,omitempty"`  // permission bits
	MTime int64  `json:"mtime,omitempty"` // Unix nanoseconds
	// Holes is how many of the file's bytes lie in chunks (of the offer's
	// ChunkSize) that the sender's file system holds as holes: they read as
	// zeros and take no disk. The file's data is Size-Holes, counted in
	// whole chunks: a chunk with any data in it counts whole. A receiver
	// that leaves chunks of zeros as holes counts Size-Holes in its space
	// check and takes no more data than that (docs/compatibility.md,
	// "Sparse files"). 0, or absent (a Ferry before it, a file without
	// holes), says none: the whole size is data. At most Size.
	Holes int64 `json:"holes,omitempty"`
}

// OfferFiles carries part of the manifest, starting at file index Start.
type OfferFiles struct {
	Start int         `json:"start"`
	Files []FileEntry `json:"files"`
}

// OfferFolders carries part of the offer's empty folders, starting at
// folder index Start: relative, slash-separated paths, validated by the
// receiver as file paths are. They come after the last OfferFiles.
type OfferFolders struct {
	Start int      `json:"start"`
	Paths []string `json:"paths"`
}

// Decision is the receiver's answer to an offer.
type Decision struct {
	Accept bool `json:"accept"`
	// Files lists accepted file indexes; nil means all. Not omitempty: an
	// empty list (accept none) must not arrive as nil (accept all).
	Files  []uint32 `json:"files"`
	Code   Code     `json:"code,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Refused lists offered files the receiver refused by itself (a name it
	// cannot store safely, say) while it accepts the others.
	Refused []Refusal `json:"refused,omitempty"`
	// Checked is how long, in milliseconds, the receiver spent after its
	// decision checking what it kept of the files from an earlier session
	// (resume: the Have messages before this one), at least 1 when it kept
	// any; 0 when it kept none, or from an older Ferry.
	Checked uint32 `json:"checked_ms,omitempty"`
	// CodeShown, from a receiver whose hello lists FeatureCodeShown, says
	// whether its user was shown the session's verification code (asked
	// about the offer with it): the sender asks its own user to compare
	// only a code the other screen showed. From an older Ferry it is
	// absent, and the sender cannot tell.
	CodeShown bool `json:"code_shown,omitempty"`
	// Same, from a receiver whose hello lists FeatureSame to a sender whose
	// hello does, is a bitmap of the accepted files (file i in bit i%8 of
	// byte i/8) that the receiver already holds a file of under their name,
	// of their size: for each, Same messages with the leaves of what it
	// holds follow, in file order, the last one Done. The sender waits for
	// a chunk's leaf before it sends the chunk. Absent: none.
	Same []byte `json:"same,omitempty"`
}

// SameHolds reports whether d.Same names file i.
func (d *Decision) SameHolds(i int) bool {
	return i >= 0 && i/8 < len(d.Same) && d.Same[i/8]&(1<<(i%8)) != 0
}

// Prompt tells the sender where its offer stands on the receiver's screen,
// between the offer and the decision: Shown, its user is shown the offer
// now, with the session's verification code; not Shown, the offer waits
// behind another device's, and its user cannot see the code yet. Sent
// only to senders whose hello lists FeaturePrompt, and only when it
// changes; from an older Ferry nothing comes, and the sender cannot tell.
type Prompt struct {
	Shown bool `json:"shown"`
	// Ahead, not Shown, is how many offers wait for the receiver's user
	// before this one when the receiving Ferry itself queues it (it shows
	// as many prompts as it may at once), at most MaxPromptAhead; 0 when
	// its client keeps it behind the one prompt it shows. It is said again,
	// lower, each time the offer moves up that queue (never higher: a
	// newcomer put before it is not told), so a sender counts against its
	// bound on Prompt messages only those that are not lower than every
	// Ahead before. A sender that does not know the field reads the offer
	// queued all the same.
	Ahead int `json:"ahead,omitempty"`
}

// MaxPromptAhead bounds Prompt.Ahead: a receiver queues a few dozen offers
// at most, and says more as this.
const MaxPromptAhead = 1000

// Refusal is one offered file the receiver refused, and why.
type Refusal struct {
	File   uint32 `json:"file"`
	Code   Code   `json:"code"`
	Reason string `json:"reason,omitempty"`
}

// Have tells the sender which chunks of a file the receiver already holds
// (resume). Have messages come right before the Decision. Chunks is a bitmap, chunk i in bit i%8 of byte i/8.
type Have struct {
	File   uint32 `json:"file"`
	Chunks []byte `json:"chunks"`
	// Done: the file was saved in an earlier attempt; nothing of it is needed.
	Done bool `json:"done,omitempty"`
}

// Same carries leaves of a file the receiver holds under the name of an
// offered file, at its size (Decision.Same): Leaves holds the BLAKE3
// leaves (32 bytes each) of its chunks Start, Start+1, ..., in the offer's
// chunk size. Done says no more come for the file: the leaves sent are all
// the receiver has (none, when it could not read its file after all). A
// chunk whose bytes hash to the leaf given is not sent but named in the
// file's same frame (SameChunk).
type Same struct {
	File   uint32 `json:"file"`
	Start  uint32 `json:"start"`
	Leaves []byte `json:"leaves,omitempty"`
	Done   bool   `json:"done,omitempty"`
}

// MaxSameLeaves bounds the leaves of one Same message (512 KiB of them).
const MaxSameLeaves = 16 << 10

// Leaf returns leaf i of m (i < m.Count()).
func (m *Same) Leaf(i int) (h [32]byte) {
	copy(h[:], m.Leaves[i*32:])
	return h
}

// Count is how many leaves m carries.
func (m *Same) Count() int { return len(m.Leaves) / 32 }

// NeedChunk asks the sender to send a chunk again (its leaf did not match).
type NeedChunk struct {
	File  uint32 `json:"file"`
	Chunk uint32 `json:"chunk"`
}

// FileResult reports one file's outcome on the receiver.
type FileResult struct {
	File    uint32 `json:"file"`
	OK      bool   `json:"ok"`
	SavedAs string `json:"saved_as,omitempty"`
	Code    Code   `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// FileUnsent tells the receiver that the sender cannot send an accepted
// file (it could not read it: deleted, unreadable, cut short while it was
// sent): the receiver gives it up, and the others go on. Sent only to
// receivers whose hello lists FeatureUnsent, never after the file's root.
type FileUnsent struct {
	File   uint32 `json:"file"`
	Code   Code   `json:"code"`
	Reason string `json:"reason,omitempty"`
}

// SenderDone says every accepted file was sent and announced with FileDone.
type SenderDone struct{}

// Result is the receiver's last word on a transfer.
type Result struct {
	OK       bool   `json:"ok"`
	Files    int    `json:"files"`
	Verified int    `json:"verified"`
	Code     Code   `json:"code,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Cancel ends a transfer early, from either side.
type Cancel struct {
	Code   Code   `json:"code"`
	Reason string `json:"reason,omitempty"`
}

// Type implementations.
func (*Hello) Type() Type        { return THello }
func (*Offer) Type() Type        { return TOffer }
func (*OfferFiles) Type() Type   { return TOfferFiles }
func (*Decision) Type() Type     { return TDecision }
func (*Have) Type() Type         { return THave }
func (*NeedChunk) Type() Type    { return TNeedChunk }
func (*FileResult) Type() Type   { return TFileResult }
func (*SenderDone) Type() Type   { return TSenderDone }
func (*Result) Type() Type       { return TResult }
func (*Cancel) Type() Type       { return TCancel }
func (*FileUnsent) Type() Type   { return TFileUnsent }
func (*OfferFolders) Type() Type { return TOfferFolders }
func (*Prompt) Type() Type       { return TPrompt }
func (*Same) Type() Type         { return TSame }
func (*PairReveal) Type() Type   { return TPairReveal }
func (*PairConfirm) Type() Type  { return TPairConfirm }

func checkText(field, s string, max int) error {
	if len(s) > max {
		return protoErr("%s is %d bytes, over the %d limit", field, len(s), max)
	}
	if !utf8.ValidString(s) {
		return protoErr("%s is not valid UTF-8", field)
	}
	return nil
}

func (m *Hello) validate() error {
	if m.Version < 1 {
		return protoErr("hello: version %d", m.Version)
	}
	if err := checkText("device name", m.Name, MaxNameLen); err != nil {
		return err
	}
	if len(m.ID) != 52 {
		return protoErr("hello: device ID of %d characters", len(m.ID))
	}
	if len(m.Features) > 32 || len(m.OS) > 32 || len(m.Pair) > 256 {
		return protoErr("hello: oversized fields")
	}
	for _, f := range m.Features {
		if len(f) > 32 {
			return protoErr("hello: feature name of %d bytes", len(f))
		}
	}
	if err := CheckRendezvousFingerprint(m.Rendezvous); err != nil {
		return protoErr("hello: %v", err)
	}
	if m.DataStreams != 0 && (m.DataStreams < LegacyDataStreams || m.DataStreams > MaxDataStreams) {
		return protoErr("hello: %d data streams outside [%d, %d]", m.DataStreams, LegacyDataStreams, MaxDataStreams)
	}
	return nil
}

// SessionDataStreams is how many data streams a session to the peer whose
// hello is h may open: what it said, or LegacyDataStreams when it said
// nothing. h passed validation.
func (h *Hello) SessionDataStreams() int {
	if h.DataStreams == 0 {
		return LegacyDataStreams
	}
	return h.DataStreams
}

// RendezvousFingerprintLen is the length of Hello.Rendezvous: lowercase hex
// of a hash of the rendezvous secret (engine/internal/rendezvous makes it;
// the wire owns its shape, so wire stays a leaf package).
const RendezvousFingerprintLen = 16

// CheckRendezvousFingerprint checks a fingerprint from a peer: "" or
// RendezvousFingerprintLen lowercase hex digits.
func CheckRendezvousFingerprint(fp string) error {
	if fp == "" {
		return nil
	}
	if len(fp) != RendezvousFingerprintLen {
		return fmt.Errorf("a rendezvous fingerprint of %d characters", len(fp))
	}
	for _, c := range []byte(fp) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("a rendezvous fingerprint with %q", c)
		}
	}
	return nil
}

func (m *PairReveal) validate() error {
	if len(m.Nonce) > 256 {
		return protoErr("pair reveal: nonce of %d bytes", len(m.Nonce))
	}
	return nil
}

func (m *PairConfirm) validate() error { return nil }

func (m *Offer) validate() error {
	switch {
	case len(m.Transfer) == 0 || len(m.Transfer) > 64:
		return protoErr("offer: transfer ID of %d bytes", len(m.Transfer))
	case m.ChunkSize < MinChunkSize || m.ChunkSize > MaxChunkSize:
		return protoErr("offer: chunk size %d outside [%d, %d]", m.ChunkSize, MinChunkSize, MaxChunkSize)
	case m.Files < 0 || m.Files > MaxFiles:
		return protoErr("offer: %d files (limit %d)", m.Files, MaxFiles)
	case m.Folders < 0 || m.Folders > MaxFolders:
		return protoErr("offer: %d folders (limit %d)", m.Folders, MaxFolders)
	case m.TotalBytes < 0:
		return protoErr("offer: negative total size")
	case len(m.Manifest) > 128:
		return protoErr("offer: manifest ID too long")
	}
	return checkText("offer text", m.Text, MaxTextLen)
}

func (m *OfferFiles) validate() error {
	if m.Start < 0 || m.Start > MaxFiles || len(m.Files) > MaxFilesPerPart {
		return protoErr("offer files: start %d, %d entries", m.Start, len(m.Files))
	}
	for i, f := range m.Files {
		if f.Size < 0 {
			return protoErr("offer files: file %d has negative size", m.Start+i)
		}
		if f.Holes < 0 || f.Holes > f.Size {
			return protoErr("offer files: file %d has %d bytes of holes in %d", m.Start+i, f.Holes, f.Size)
		}
		if len(f.Path) > 4096 {
			return protoErr("offer files: file %d path too long", m.Start+i)
		}
	}
	return nil
}

func (m *OfferFolders) validate() error {
	if m.Start < 0 || m.Start > MaxFolders || len(m.Paths) == 0 || len(m.Paths) > MaxFilesPerPart {
		return protoErr("offer folders: start %d, %d paths", m.Start, len(m.Paths))
	}
	for i, p := range m.Paths {
		if p == "" || len(p) > MaxFolderPath {
			return protoErr("offer folders: folder %d has a path of %d bytes", m.Start+i, len(p))
		}
	}
	return nil
}

func (m *Decision) validate() error {
	if err := checkCode(m.Code); err != nil {
		return err
	}
	if len(m.Files) > MaxFiles {
		return protoErr("decision: %d files", len(m.Files))
	}
	if len(m.Refused) > MaxRefusals {
		return protoErr("decision: %d refusals (limit %d)", len(m.Refused), MaxRefusals)
	}
	if len(m.Same) > (MaxFiles+7)/8 {
		return protoErr("decision: a same bitmap of %d bytes", len(m.Same))
	}
	for _, r := range m.Refused {
		if err := checkCode(r.Code); err != nil {
			return err
		}
		if err := checkText("refusal reason", r.Reason, MaxRefusalLen); err != nil {
			return err
		}
	}
	return checkText("reason", m.Reason, MaxReasonLen)
}

func (m *Have) validate() error {
	if len(m.Chunks) > MaxMessage/2 {
		return protoErr("have: bitmap too long")
	}
	return nil
}

func (m *NeedChunk) validate() error { return nil }

func (m *Same) validate() error {
	switch {
	case len(m.Leaves)%32 != 0:
		return protoErr("same: %d bytes of leaves is not whole leaves", len(m.Leaves))
	case len(m.Leaves) > MaxSameLeaves*32:
		return protoErr("same: %d leaves, over the %d of one message", len(m.Leaves)/32, MaxSameLeaves)
	case len(m.Leaves) == 0 && !m.Done:
		return protoErr("same: no leaves, and not done")
	case uint64(m.Start)+uint64(len(m.Leaves)/32) > 1<<32:
		return protoErr("same: leaves up to chunk %d", uint64(m.Start)+uint64(len(m.Leaves)/32))
	}
	return nil
}

func (m *FileResult) validate() error {
	if err := checkCode(m.Code); err != nil {
		return err
	}
	if err := checkText("saved name", m.SavedAs, 4096); err != nil {
		return err
	}
	return checkText("reason", m.Reason, MaxReasonLen)
}

func (m *FileUnsent) validate() error {
	if err := checkCode(m.Code); err != nil {
		return err
	}
	return checkText("reason", m.Reason, MaxRefusalLen)
}

func (m *SenderDone) validate() error { return nil }

func (m *Prompt) validate() error {
	if m.Ahead < 0 || m.Ahead > MaxPromptAhead {
		return fmt.Errorf("%w: a prompt with %d offers ahead (0 to %d)", ErrProtocol, m.Ahead, MaxPromptAhead)
	}
	if m.Shown && m.Ahead != 0 {
		return fmt.Errorf("%w: a prompt shown with %d offers ahead of it", ErrProtocol, m.Ahead)
	}
	return nil
}

func (m *Result) validate() error {
	if err := checkCode(m.Code); err != nil {
		return err
	}
	if m.Files < 0 || m.Files > MaxFiles || m.Verified < 0 || m.Verified > m.Files {
		return protoErr("result: %d of %d files verified", m.Verified, m.Files)
	}
	return checkText("reason", m.Reason, MaxReasonLen)
}

func (m *Cancel) validate() error {
	if err := checkCode(m.Code); err != nil {
		return err
	}
	return checkText("reason", m.Reason, MaxReasonLen)
}

// checkCode bounds a peer's error code; unknown codes are kept (a newer peer
// may know more) and read as generic errors.
func checkCode(c Code) error { return checkText("error code", string(c), 32) }
