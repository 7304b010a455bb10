package weblink

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// A share's zip is laid out the same way on every request while its files
// stay as they are (same names, sizes and modification times), so an
// interrupted download resumes by range (If-Range with the zip's ETag) as a
// single file does. Each entry is stored (not compressed), its CRC32 in a
// data descriptor after its bytes: the local headers do not depend on the
// contents, the size of the whole zip is known before the first byte, and
// a download from the start reads every file once. A range that starts
// further on needs the CRCs of the files before it, for their descriptors
// and the central directory: those a download of this share computed
// already are kept (zipCRCs), the others are read again.
//
// The bytes come from archive/zip's writer (CreateRaw, which takes the sizes
// and CRCs as given), run from the start every time: the bytes before the
// range are passed by without reading their files (zipZeros the window
// drops), so the zip's layout is archive/zip's own.

// zipPlan is a share's zip as of one request: what it holds and in which
// order, what it leaves out, its size and its ETag.
type zipPlan struct {
	entries []zipEntry
	missing []string // rows left out, each with why ("a.txt (no such file or directory)")
	note    zipEntry // the note naming them (row -1), when there are any
	text    []byte   // the note's contents; empty: no note
	noteAs  string   // the note's name
	size    int64    // bytes in the whole zip
	etag    string   // strong: the same ETag, the same bytes
}

// zipEntry is one file of a zip: a share's row as it was when the plan was
// made. 24 bytes: its name is the row's (zipEntryName), made again when
// written.
type zipEntry struct {
	row  int // the share's row; -1: the plan's note
	size int64
	mod  int64 // modification time, Unix nanoseconds
}

// modTime is when e's file was last modified, in local time.
func (e zipEntry) modTime() time.Time { return time.Unix(0, e.mod) }

// planZip lists what the zip holds now: every row that is still a regular
// file, and a note naming those that are not. It looks at each file (a
// stat) but reads none.
func (sh *share) planZip(ctx context.Context) (*zipPlan, error) {
	p := &zipPlan{entries: make([]zipEntry, 0, len(sh.files))}
	h := sha256.New()
	var num [8]byte
	for i, f := range sh.files {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fi, err := sh.roots[f.root].root.Stat(sh.rel(f))
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("%s is no longer a regular file", f.name)
		}
		if err != nil {
			why := err.Error()
			if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
				why = pe.Err.Error()
			}
			p.missing = append(p.missing, f.name+" ("+why+")")
			continue
		}
		e := zipEntry{row: i, size: fi.Size(), mod: fi.ModTime().UnixNano()}
		p.entries = append(p.entries, e)
		h.Write([]byte(zipEntryName(f.name)))
		h.Write([]byte{0})
		h.Write(binary.LittleEndian.AppendUint64(num[:0], uint64(e.size)))
		h.Write(binary.LittleEndian.AppendUint64(num[:0], uint64(e.mod)))
	}
	if len(p.missing) > 0 {
		name := notIncludedName
		for i := 2; slices.ContainsFunc(sh.files, func(f shared) bool { return zipEntryName(f.name) == name }); i++ {
			name = fmt.Sprintf("NOT INCLUDED (%d).txt", i) // a shared file has that name
		}
		p.text = fmt.Appendf(nil, "These files could not be read on %s when this zip was made, so they are not in it:\r\n\r\n%s\r\n",
			sh.l.s.opts.DeviceName, strings.Join(p.missing, "\r\n"))
		// The note's time is the link's start: the same on every request.
		p.note = zipEntry{row: -1, size: int64(len(p.text)), mod: sh.made.UnixNano()}
		p.noteAs = name
		h.Write(p.text)
	}
	p.etag = `"z` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
	// The size: the whole zip counted, no file read and nothing written.
	var err error
	if p.size, err = sh.writeZip(ctx, context.Background(), p, nil, 0, -1); err != nil {
		return nil, err
	}
	return p, nil
}

// errWindowDone stops the writer once the range asked for is written.
var errWindowDone = errors.New("weblink: the range is written")

// errZipChanged: a file changed between the plan and its turn in the zip,
// so the zip cannot be the one the plan (and its ETag) promised.
var errZipChanged = errors.New("changed while the zip was downloaded")

// window passes on the bytes [start, end) of what is written through it and
// drops the rest; end < 0 counts without passing anything (the plan's size).
type window struct {
	w          io.Writer
	pos        int64 // bytes written through it so far
	start, end int64
}

func (wn *window) Write(b []byte) (int, error) {
	lo, hi := wn.pos, wn.pos+int64(len(b))
	if wn.end < 0 || hi <= wn.start {
		wn.pos = hi
		return len(b), nil
	}
	if lo >= wn.end {
		return 0, errWindowDone
	}
	from, to := max(wn.start-lo, 0), min(wn.end-lo, int64(len(b)))
	n, err := wn.w.Write(b[from:to])
	wn.pos = lo + from + int64(n)
	if err == nil && to < int64(len(b)) {
		err = errWindowDone
	}
	if err != nil {
		return int(from) + n, err
	}
	return len(b), nil
}

// in reports whether any of [lo, hi) is in the window.
func (wn *window) in(lo, hi int64) bool {
	return wn.end >= 0 && hi > wn.start && lo < wn.end
}

// zipZeros is what the writer passes for bytes outside the window.
var zipZeros = make([]byte, 1<<20)

// writeZip writes the bytes [start, end) of p's zip to w (end < 0: none, it
// only counts) and returns how many bytes the zip has up to where it
// stopped: its size when it was only counted. linkCtx and req stop it (the
// link's end, the browser gone).
func (sh *share) writeZip(linkCtx, req context.Context, p *zipPlan, w io.Writer, start, end int64) (int64, error) {
	wn := &window{w: w, start: start, end: end}
	zw := zip.NewWriter(wn)
	z := &zipRun{sh: sh, wn: wn, zw: zw, ctx: linkCtx, req: req}
	entries := p.entries
	if len(p.text) > 0 {
		entries = append(entries[:len(entries):len(entries)], p.note)
	}
	for _, e := range entries {
		if err := z.entry(e, p); err != nil {
			return wn.pos, stopped(err)
		}
	}
	if err := zw.Close(); err != nil {
		return wn.pos, stopped(err)
	}
	return wn.pos, nil
}

// stopped is nil when err only says the range is written.
func stopped(err error) error {
	if errors.Is(err, errWindowDone) {
		return nil
	}
	return err
}

// zipRun is one pass of the writer over a plan.
type zipRun struct {
	sh       *share
	wn       *window
	zw       *zip.Writer
	ctx, req context.Context
	buf      []byte
}

// entry writes e, an entry of p, as its header, bytes and data descriptor.
func (z *zipRun) entry(e zipEntry, p *zipPlan) error {
	name := p.noteAs
	if e.row >= 0 {
		name = zipEntryName(z.sh.files[e.row].name)
	}
	fh := zipHeader(name, e)
	hw, err := z.zw.CreateRaw(fh)
	if err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	if err := z.zw.Flush(); err != nil { // so that the window's position is the data's
		return err
	}
	at := z.wn.pos
	if e.row < 0 {
		fh.CRC32 = crc32.ChecksumIEEE(p.text)
		_, err := hw.Write(p.text)
		return err
	}
	crc, known := z.sh.cachedCRC(e)
	// The bytes of the file in the window, and whether its CRC is needed:
	// its descriptor, or the central directory, is in the window.
	lo, hi := clamp(z.wn.start-at, e.size), clamp(z.wn.end-at, e.size)
	if z.wn.end < 0 {
		lo, hi = 0, 0
	}
	needCRC := !known && z.wn.in(at+e.size, math.MaxInt64)
	if hi <= lo && !needCRC {
		fh.CRC32 = crc
		return pass(hw, e.size)
	}
	from, to := lo, hi
	if needCRC {
		from, to = 0, e.size
	}
	sum, err := z.read(e, hw, from, to, needCRC)
	if err != nil {
		return err
	}
	if needCRC {
		crc = sum
		z.sh.keepCRC(e, crc)
	}
	fh.CRC32 = crc
	return pass(hw, e.size-to)
}

// read writes the bytes [from, to) of e's file through hw (after passing
// the bytes before from), with their CRC32 when sum is asked for.
func (z *zipRun) read(e zipEntry, hw io.Writer, from, to int64, sum bool) (uint32, error) {
	file, fi, err := z.sh.open(e.row)
	if err != nil {
		return 0, fmt.Errorf("zip: %s: %w", z.sh.files[e.row].name, err)
	}
	defer file.Close()
	if fi.Size() != e.size || fi.ModTime().UnixNano() != e.mod {
		return 0, fmt.Errorf("zip: %s: %w", z.sh.files[e.row].name, errZipChanged)
	}
	if err := pass(hw, from); err != nil {
		return 0, err
	}
	if _, err := file.Seek(from, io.SeekStart); err != nil {
		return 0, fmt.Errorf("zip: %s: %w", z.sh.files[e.row].name, err)
	}
	if z.buf == nil {
		z.buf = make([]byte, 256<<10)
	}
	crc := crc32.NewIEEE()
	dst := hw
	if sum {
		dst = io.MultiWriter(crc, hw)
	}
	src := &ctxReadSeeker{ctx: z.ctx, rs: file, req: z.req}
	got, err := io.CopyBuffer(dst, io.LimitReader(src, to-from), z.buf)
	if err == nil && got < to-from {
		err = errZipChanged // shorter than when the plan was made
	}
	if err != nil && !errors.Is(err, errWindowDone) {
		err = fmt.Errorf("zip: %s: %w", z.sh.files[e.row].name, err)
	}
	return crc.Sum32(), err
}

// pass writes n bytes that fall outside the window (so are dropped) through
// w, which counts them.
func pass(w io.Writer, n int64) error {
	for n > 0 {
		k := min(n, int64(len(zipZeros)))
		if _, err := w.Write(zipZeros[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func clamp(v, hi int64) int64 { return min(max(v, 0), hi) }

// zipHeader is e's header, stored, its CRC and sizes in a data descriptor
// after its bytes (the local header has zipZeros there). Its time is written
// as archive/zip's CreateHeader writes it: MS-DOS fields in local time and
// an "extended timestamp" field.
func zipHeader(name string, e zipEntry) *zip.FileHeader {
	fh := &zip.FileHeader{
		Name: name, Method: zip.Store, Flags: 0x8,
		CreatorVersion: 20, ReaderVersion: 20,
		CompressedSize64: uint64(e.size), UncompressedSize64: uint64(e.size),
	}
	if fh.UncompressedSize64 >= math.MaxUint32 {
		fh.ReaderVersion = 45 // zip64
	}
	if !isASCII(name) && utf8.ValidString(name) {
		fh.Flags |= 0x800
	}
	mod := e.modTime()
	fh.ModifiedDate, fh.ModifiedTime = msDosTime(mod)
	fh.Extra = binary.LittleEndian.AppendUint16(nil, 0x5455) // extended timestamp
	fh.Extra = binary.LittleEndian.AppendUint16(fh.Extra, 5)
	fh.Extra = append(fh.Extra, 1) // the modification time only
	fh.Extra = binary.LittleEndian.AppendUint32(fh.Extra, uint32(mod.Unix()))
	return fh
}

// msDosTime is t (in local time, as an unzipper shows it) as MS-DOS date
// and time fields, which start in 1980.
func msDosTime(t time.Time) (date, clock uint16) {
	if t.Year() < 1980 {
		t = time.Date(1980, 1, 1, 0, 0, 0, 0, t.Location())
	}
	date = uint16(t.Day() + int(t.Month())<<5 + (t.Year()-1980)<<9)
	clock = uint16(t.Second()/2 + t.Minute()<<5 + t.Hour()<<11)
	return date, clock
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// zipCRCs keeps the CRC32 of each row a zip computed, with a stamp of the
// file's size and time it was computed for: 8 bytes a row, made on the
// share's first zip.
type zipCRCs struct {
	mu   sync.Mutex
	rows []zipCRC
}

type zipCRC struct{ crc, stamp uint32 }

// stamp sums e's size and time (never 0: 0 is no CRC kept).
func stamp(e zipEntry) uint32 {
	h := uint64(e.size)*0x9E3779B97F4A7C15 ^ uint64(e.mod)
	h ^= h >> 29
	h *= 0xBF58476D1CE4E5B9
	h ^= h >> 32
	return uint32(h) | 1
}

func (sh *share) cachedCRC(e zipEntry) (uint32, bool) {
	sh.crcs.mu.Lock()
	defer sh.crcs.mu.Unlock()
	if e.row >= len(sh.crcs.rows) {
		return 0, false
	}
	c := sh.crcs.rows[e.row]
	return c.crc, c.stamp == stamp(e)
}

func (sh *share) keepCRC(e zipEntry, crc uint32) {
	sh.crcs.mu.Lock()
	defer sh.crcs.mu.Unlock()
	if sh.crcs.rows == nil {
		sh.crcs.rows = make([]zipCRC, len(sh.files))
	}
	sh.crcs.rows[e.row] = zipCRC{crc: crc, stamp: stamp(e)}
}

// zipStream is a plan's zip for http.ServeContent: it seeks, and its bytes
// reach the answer through countingWriter.ReadFrom (writeTo), never Read.
type zipStream struct {
	sh       *share
	plan     *zipPlan
	ctx, req context.Context
	pos      int64
	err      error // why writing stopped short, if it did
}

func (z *zipStream) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += z.pos
	case io.SeekEnd:
		off += z.plan.size
	default:
		return 0, errors.New("weblink: zip: bad whence")
	}
	if off < 0 {
		return 0, errors.New("weblink: zip: negative position")
	}
	z.pos = off
	return off, nil
}

// Read is not how a zip is sent (see writeTo): http.ServeContent reads only
// to sniff a type (the zip's is set) or for several ranges in one answer
// (serveZip serves one at most).
func (z *zipStream) Read([]byte) (int, error) {
	return 0, errors.New("weblink: a zip is written to its answer, not read")
}

// writeTo writes n bytes (n < 0: to the end) from the position to w.
func (z *zipStream) writeTo(w io.Writer, n int64) (int64, error) {
	if n < 0 {
		n = z.plan.size - z.pos
	}
	cw := &countWriter{w: w}
	_, err := z.sh.writeZip(z.ctx, z.req, z.plan, cw, z.pos, z.pos+n)
	z.pos += cw.n
	if err == nil && cw.n < n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && z.err == nil {
		z.err = err
	}
	return cw.n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
