// Package wire is Ferry's protocol encoding. It is written against plain
// io.Reader/io.Writer so it runs over QUIC streams, TCP+TLS connections and
// net.Pipe alike.
//
// Every stream starts with one kind byte (KindControl or KindData). The control
// stream carries length-prefixed messages: a type byte, a big-endian uint32
// length, and a JSON body of at most MaxMessage bytes. Data streams carry
// chunk frames: a fixed 44-byte header (file index, chunk index, length, BLAKE3
// leaf) followed by the chunk's bytes.
package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"
)

// Version is the protocol version this build speaks.
const Version = 1

// Stream kinds: the first byte written on every stream.
const (
	KindControl byte = 1
	KindData    byte = 2
	// Kind 3 is retired: auto's attach is a transport join now (see
	// engine/internal/transport/join).
)

// Limits on what a peer can make us allocate or do.
const (
	MaxMessage      = 4 << 20   // one control message body
	MaxChunkSize    = 4 << 20   // largest chunk size an offer may use (it bounds the receiver's buffers)
	MinChunkSize    = 4 << 10   // smallest chunk size an offer may use
	MaxFiles        = 1_000_000 // files in one offer
	MaxFilesPerPart = 8192      // files in one OfferFiles message
	MaxFolders      = 1_000_000 // empty folders in one offer (Offer.Folders)
	MaxFolderPath   = 4096      // bytes of one folder's path
	MaxNameLen      = 255       // device name, bytes
	MaxReasonLen    = 1024      // free-text reasons, bytes
	MaxRefusals     = 1000      // files one decision may refuse by name
	MaxRefusalLen   = 256       // the reason of one refusal, bytes
	MaxTextLen      = 64 << 10  // the text item of an offer (a message, a link, a clipboard), bytes
)

// Features a Hello may list: optional capabilities of the peer's build.
const (
	FeatureResume = "resume" // it reports what it holds of an earlier attempt (Have)
	FeatureText   = "text"   // it takes offers with a text item (Offer.Text)
	// FeatureUnsent: it takes FileUnsent, so a sender that cannot read one
	// file sends the others (without it, the send ends there).
	FeatureUnsent = "unsent"
	// FeatureRendezvous: its pairing step also settles the rendezvous
	// secret (Hello.Rendezvous), the pairing exchange's step for issue #29.
	FeatureRendezvous = "rendezvous"
	// FeatureFolders: it takes an offer's empty folders (Offer.Folders,
	// OfferFolders) and creates them; to a receiver without it they are
	// not sent.
	FeatureFolders = "folders"
	// FeatureCodeShown: its Decision says whether its user was shown the
	// session's verification code (Decision.CodeShown).
	FeatureCodeShown = "code-shown"
	// FeatureZeroChunks: it takes a root frame that names the file's
	// chunks of zeros (ZeroRuns), which are then not sent: it computes
	// their leaves itself. To a receiver without it every chunk is sent.
	FeatureZeroChunks = "zero-chunks"
	// FeatureZerosFirst: with FeatureZeroChunks, it takes a zeros frame
	// (ZerosChunk) that names a file's chunks of zeros before its first
	// chunk of data, so that it counts them as they are skipped, not at the
	// file's root frame (which names them again). To a receiver without it
	// they go in the root frame alone.
	FeatureZerosFirst = "zeros-first"
	// FeaturePrompt: as a receiver, it says when its user is shown the
	// offer, and before that whether the offer waits behind another
	// device's (Prompt); as a sender, it reads Prompt. Each side sends
	// Prompt only to a peer whose hello lists it.
	FeaturePrompt = "prompt"
	// FeaturePromptMoves: as a sender, with FeaturePrompt, it takes a
	// Prompt for each move of its offer up the receiver's own queue (each
	// Ahead lower than the one before), not counted against its bound of
	// Prompts per offer. To a sender without it the receiver says the
	// offer's place once, as it queues: a build before it counts every
	// Prompt, and ended the session at its ninth.
	FeaturePromptMoves = "prompt-moves"
	// FeatureSame: as a receiver, it may name in its Decision the files it
	// holds already under their names at their sizes (Decision.Same) and
	// then send the leaves of what it holds (Same); as a sender, it compares
	// each chunk it reads with them, sends only the chunks that differ, and
	// names the others in a same frame (SameChunk) before the file's root.
	// A file sent again travels as its changes alone. Each side does its
	// part only when the other's hello lists it.
	FeatureSame = "same"
	// FeaturePacked: as a receiver, it takes chunk frames whose payload is
	// the chunk compressed with zstd (DataHeader.Packed); a sender sends
	// such frames only to a receiver whose hello lists it, and only for a
	// chunk that compresses. To a receiver without it every chunk travels
	// as it is.
	FeaturePacked = "packed"
)

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrProtocol, fmt.Sprintf(format, args...))
}

// Type identifies a control message.
type Type uint8

// Control message types.
const (
	THello        Type = 1
	TOffer        Type = 2
	TOfferFiles   Type = 3
	TDecision     Type = 4
	_             Type = 5 // retired: roots travel in-band as root frames (RootChunk)
	TNeedChunk    Type = 6
	TFileResult   Type = 7
	TSenderDone   Type = 8
	TResult       Type = 9
	TCancel       Type = 10
	THave         Type = 11
	TPairReveal   Type = 12
	TPairConfirm  Type = 13
	TFileUnsent   Type = 14
	TOfferFolders Type = 15
	TPrompt       Type = 16
	TSame         Type = 17
)

func (t Type) String() string {
	names := map[Type]string{THello: "hello", TOffer: "offer", TOfferFiles: "offer-files", TDecision: "decision",
		TNeedChunk: "need-chunk", TFileResult: "file-result", TSenderDone: "sender-done",
		TResult: "result", TCancel: "cancel", THave: "have", TPairReveal: "pair-reveal", TPairConfirm: "pair-confirm", TFileUnsent: "file-unsent",
		TOfferFolders: "offer-folders", TPrompt: "prompt", TSame: "same"}
	if n, ok := names[t]; ok {
		return n
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Message is any control message body.
type Message interface {
	Type() Type
	validate() error
}

// WriteMessage encodes m as one control frame.
func WriteMessage(w io.Writer, m Message) error {
	// The frame is built in one buffer: 5 bytes of header, then the body.
	var frame []byte
	switch f := m.(type) {
	case *OfferFiles:
		frame = appendOfferFiles(make([]byte, 5, offerFilesLen(f)), f) // offerfiles.go
	case *FileResult:
		frame = appendFileResult(make([]byte, 5, 5+fileResultLen+len(f.SavedAs)+len(f.Code)+len(f.Reason)), f) // offerfiles.go
	default:
		body, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("wire: encode %v: %w", m.Type(), err)
		}
		frame = append(make([]byte, 5, 5+len(body)), body...)
	}
	if n := len(frame) - 5; n > MaxMessage {
		return fmt.Errorf("wire: %v message is %d bytes, over the %d limit", m.Type(), n, MaxMessage)
	}
	frame[0] = byte(m.Type())
	binary.BigEndian.PutUint32(frame[1:], uint32(len(frame)-5))
	if _, err := w.Write(frame); err != nil {
		return fmt.Errorf("wire: write %v: %w", m.Type(), err)
	}
	return nil
}

// ReadMessage reads and validates one control frame. An unknown type, an
// oversized body, malformed JSON or out-of-range fields are ErrProtocol.
// A stream's messages are better read with one Reader, which keeps its
// buffer from one to the next.
func ReadMessage(r io.Reader) (Message, error) { return NewReader(r).ReadMessage() }

// A Reader reads the control messages of one stream. It keeps the buffer of
// a body, up to keepBody bytes, for the next: a manifest's parts are
// hundreds of KiB each.
type Reader struct {
	r   io.Reader
	buf []byte
	hdr [5]byte // a frame's header, here so that reading one allocates nothing
}

// keepBody is the largest body buffer a Reader keeps between messages
// (what a large manifest's parts take: 2048 entries of about 100 bytes).
const keepBody = 512 << 10

// NewReader returns a Reader of the messages of r.
func NewReader(r io.Reader) *Reader { return &Reader{r: r} }

// ReadMessage reads and validates the next control frame, as the function
// ReadMessage does.
func (r *Reader) ReadMessage() (Message, error) {
	hdr := r.hdr[:]
	if _, err := io.ReadFull(r.r, hdr); err != nil {
		return nil, err // io.EOF at a frame boundary is a clean end
	}
	n := int(binary.BigEndian.Uint32(hdr[1:]))
	if n > MaxMessage {
		return nil, protoErr("%v message of %d bytes exceeds the %d limit", Type(hdr[0]), n, MaxMessage)
	}
	m := newMessage(Type(hdr[0]))
	if m == nil {
		return nil, protoErr("unknown message type %d", hdr[0])
	}
	// Grow with what actually arrives: a peer that announces 4 MiB and sends
	// nothing makes us hold nothing, and one that sends k bytes makes us
	// hold at most twice that (and 64 KiB).
	body := r.buf[:0]
	for len(body) < n {
		step := min(n-len(body), max(64<<10, len(body)))
		body = slices.Grow(body, step)
		if _, err := io.ReadFull(r.r, body[len(body):len(body)+step]); err != nil {
			return nil, fmt.Errorf("wire: read %v body: %w", m.Type(), unexpected(err))
		}
		body = body[:len(body)+step]
	}
	if cap(body) <= keepBody {
		r.buf = body[:0] // the messages copy what they keep of the body
	} else {
		r.buf = nil
	}
	// encoding/json would silently turn invalid UTF-8 into U+FFFD, hiding it
	// from the field checks; refuse it instead.
	if !utf8.Valid(body) {
		return nil, protoErr("%v message is not valid UTF-8", m.Type())
	}
	if err := unmarshal(body, m); err != nil {
		return nil, fmt.Errorf("%w: malformed %v message: %w", ErrProtocol, m.Type(), err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// unmarshal decodes a body into m, a new message of its type: the
// manifest's parts and the per-file results with their own decoders
// (offerfiles.go, fileresult.go), the rest with encoding/json.
func unmarshal(body []byte, m Message) error {
	switch m := m.(type) {
	case *OfferFiles:
		return decodeOfferFiles(body, m)
	case *FileResult:
		return decodeFileResult(body, m) // fileresult.go
	}
	return json.Unmarshal(body, m)
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func newMessage(t Type) Message {
	switch t {
	case THello:
		return &Hello{}
	case TPairReveal:
		return &PairReveal{}
	case TPairConfirm:
		return &PairConfirm{}
	case TOffer:
		return &Offer{}
	case TOfferFiles:
		return &OfferFiles{}
	case TDecision:
		return &Decision{}
	case TNeedChunk:
		return &NeedChunk{}
	case TFileResult:
		return &FileResult{}
	case TSenderDone:
		return &SenderDone{}
	case TResult:
		return &Result{}
	case TCancel:
		return &Cancel{}
	case THave:
		return &Have{}
	case TFileUnsent:
		return &FileUnsent{}
	case TOfferFolders:
		return &OfferFolders{}
	case TPrompt:
		return &Prompt{}
	case TSame:
		return &Same{}
	}
	return nil
}

// DataHeaderLen is the size of a chunk frame header.
const DataHeaderLen = 4 + 4 + 4 + 32

// RootChunk in a DataHeader's Chunk field marks a root frame: Leaf holds the
// file's Merkle root as the sender computed it from what it read, and its
// payload is empty, or to a receiver whose hello lists FeatureZeroChunks the
// runs of the file's chunks of zeros that were not sent (zeroruns.go). The sender writes it on the data stream right behind the file's last
// chunk, so the receiver can verify a small file without waiting for the
// control stream.
const RootChunk = ^uint32(0)

// ZerosChunk in a DataHeader's Chunk field marks a zeros frame, sent only to
// a receiver whose hello lists FeatureZerosFirst, before the file's first
// chunk: its payload is the runs of the file's chunks of zeros that will not
// be sent (zeroruns.go), as its root frame carries them again; Leaf is
// unused (zero).
const ZerosChunk = RootChunk - 1

// SameChunk in a DataHeader's Chunk field marks a same frame, sent only
// to a receiver that sent leaves of the file (Same): its payload is the
// runs (zeroruns.go) of the file's chunks whose bytes hash to the leaves
// the receiver sent, which were therefore not sent; the receiver takes
// them from the file it holds. The sender writes it right before the
// file's root frame, on the same stream. Leaf is unused (zero).
const SameChunk = RootChunk - 2

// DataHeader introduces one chunk on a data stream.
type DataHeader struct {
	File  uint32
	Chunk uint32
	// Length is the payload's: the chunk's bytes, or with Packed the
	// zstd frame they were compressed into.
	Length uint32
	// Packed: the payload is the chunk compressed (one zstd frame), sent
	// only to a receiver whose hello lists FeaturePacked and only for a
	// chunk, never a root, zeros or same frame. On the wire it is the
	// length's top bit, which no length reaches (MaxChunkSize), so a
	// receiver without the feature refuses such a frame as too long.
	Packed bool
	Leaf   [32]byte // the sender's BLAKE3 leaf of the chunk's bytes
}

// packedBit marks a packed payload in a header's length field.
const packedBit = 1 << 31

// Put encodes h into b (len >= DataHeaderLen).
func (h DataHeader) Put(b []byte) {
	binary.BigEndian.PutUint32(b[0:], h.File)
	binary.BigEndian.PutUint32(b[4:], h.Chunk)
	length := h.Length
	if h.Packed {
		length |= packedBit
	}
	binary.BigEndian.PutUint32(b[8:], length)
	copy(b[12:44], h.Leaf[:])
}

// ReadDataHeader reads one chunk header. io.EOF means the stream ended
// cleanly between frames. Lengths over MaxChunkSize are ErrProtocol; the
// caller checks the rest against the offer (and a Packed frame against
// its hello).
func ReadDataHeader(r io.Reader, buf []byte) (DataHeader, error) {
	var h DataHeader
	if _, err := io.ReadFull(r, buf[:DataHeaderLen]); err != nil {
		return h, err
	}
	h.File = binary.BigEndian.Uint32(buf[0:])
	h.Chunk = binary.BigEndian.Uint32(buf[4:])
	h.Length = binary.BigEndian.Uint32(buf[8:])
	h.Packed = h.Length&packedBit != 0
	h.Length &^= packedBit
	copy(h.Leaf[:], buf[12:44])
	if h.Length > MaxChunkSize {
		return h, protoErr("chunk of %d bytes exceeds the %d limit", h.Length, MaxChunkSize)
	}
	return h, nil
}

// ReadKind reads the stream's first byte.
func ReadKind(r io.Reader) (byte, error) {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	if b[0] != KindControl && b[0] != KindData {
		return 0, protoErr("unknown stream kind %d", b[0])
	}
	return b[0], nil
}
