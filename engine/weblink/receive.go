package weblink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/internal/fileio"
	"github.com/ferrydrop/ferry/internal/safetext"
	tusd "github.com/tus/tusd/v2/pkg/handler"
	"github.com/tus/tusd/v2/pkg/memorylocker"
	xslog "golang.org/x/exp/slog" // the logger type tusd takes
)

// ChunkSize is the most a browser sends in one upload request: the page's
// tus-js-client sends chunks of exactly this, and a request with a longer
// body is refused. After a dropped connection at most one chunk is sent
// again (less: what reached this side before the drop is kept).
const ChunkSize = 8 << 20

// Inbox is where a receive link's files go: the engine's inbox (space
// check, safe names, per-file refusal, progress rows, history), or a plain
// folder (FolderInbox). The owner accepted on purpose by showing the link,
// so nobody is asked while it is open.
type Inbox interface {
	// Arrive is asked when a browser starts a file. It checks the name and
	// the space and returns the destination the file is written into, or an
	// error that refuses this file alone; the error's text is shown in the
	// page, so it is a sentence for the person sending.
	Arrive(a Arrival) (*store.Dest, error)
	// Landed reports the end of a file Arrive accepted: saved as savedAs
	// (relative to the destination, slash-separated), or not, with err.
	Landed(a Arrival, savedAs string, err error)
}

// RefusingInbox is an Inbox that also hears of each file refused before
// it arrived: its name cannot be stored (Arrive is not asked), or Arrive
// refused it. With the page's set (Arrival.Batch) it can count the file in
// its set, which would otherwise wait for it. Name is the file's name or
// path as the page gave it, unchecked: show it escaped.
type RefusingInbox interface {
	Inbox
	Refused(a Arrival, err error)
}

// PartialInbox is an Inbox that also hears where each file's partial is,
// once it is created: the destination's folder (store.Dest.Dir) and the
// partial's name in it (store.Partial.Name) and identity
// (store.Partial.Identity), so that what a crash of this process leaves can
// be found again (Landed says when it is gone).
type PartialInbox interface {
	Inbox
	Began(a Arrival, dir, partial, identity string)
}

// ProgressInbox is an Inbox that also hears how many bytes of each file
// have arrived (the engine's progress rows). Progress is called from the
// upload's request as bytes are written: it must return at once.
type ProgressInbox interface {
	Inbox
	Progress(a Arrival, bytes int64)
}

// Arrival is one file a browser sends.
type Arrival struct {
	ID   string     // the upload's ID, unique on the link
	From netip.Addr // the browser's address
	// Name is where the file goes below the download folder, checked by
	// store.ValidateHere: the file's name as the browser gave it, or for a
	// file of a folder, its path in that folder ("Trip/day 1/IMG_1.jpg").
	Name string
	// Given is the name as the browser gave it (or the file's path in its
	// folder) when Name differs from it: a backslash is saved as "_", and
	// on Windows what only Windows keeps out of names is changed
	// (store.LocalName). "" when Name is the browser's own.
	Given string
	Size  int64
	// Modified is the file's modification time as the browser gave it
	// (File.lastModified), zero when it gave none that reads.
	Modified time.Time
	// Batch is what the page said of the files picked or dropped together
	// with this one (zero when it said nothing, or nothing that reads): an
	// Inbox may make them one transfer.
	Batch Batch
	// Folder says the upload is an empty folder of a folder the page
	// sent (Size 0): Name is its path, and it is made, with the folders
	// above it, when the upload finishes (store.Dest.MakeFolder), not
	// written. It counts in its set as a file does.
	Folder bool
}

// Shown is the file's name as the browser gave it: Given, else Name.
func (a Arrival) Shown() string {
	if a.Given != "" {
		return a.Given
	}
	return a.Name
}

// Batch is the page's word on a set of files picked or dropped together:
// claims of a browser, bounded, which an Inbox may use to show them as
// one delivery, never to decide what is stored.
type Batch struct {
	// ID names the set (random, from the page): 16 to 64 lowercase hex
	// digits; "" when the page gave none.
	ID string
	// Files and Bytes are how many files the set has and their size:
	// its empty folders among its files (each an upload), Folders of them
	// (0 when the page said none, or nothing that reads, or more than
	// Files).
	Files   int
	Folders int
	Bytes   int64
	// Top is the one folder the set is (a folder picked or dropped alone):
	// a single name ValidateHere takes, and the first element of this
	// file's path; "" otherwise.
	Top string
}

// maxBatchFiles bounds the files a page may say a set has.
const maxBatchFiles = 1_000_000

// browserBatch reads the batch metadata of an upload of name (as
// uploadName gave it): "batch", "batchfiles", "batchbytes", "batchfolders"
// and "batchtop". Anything that does not read gives the zero Batch, or no
// Top, or no Folders.
func browserBatch(meta map[string]string, name string) Batch {
	id := meta["batch"]
	if len(id) < 16 || len(id) > 64 || !isLowerHex(id) {
		return Batch{}
	}
	files, err := strconv.Atoi(meta["batchfiles"])
	if err != nil || files < 1 || files > maxBatchFiles {
		return Batch{}
	}
	bytes, err := strconv.ParseInt(meta["batchbytes"], 10, 64)
	if err != nil || bytes < 0 || bytes > 1<<50 {
		return Batch{}
	}
	b := Batch{ID: id, Files: files, Bytes: bytes}
	if n, err := strconv.Atoi(meta["batchfolders"]); err == nil && n >= 0 && n <= files {
		b.Folders = n
	}
	if top := store.LocalName(meta["batchtop"]); top != "" && !strings.Contains(top, "/") &&
		store.ValidateHere(top) == nil && strings.HasPrefix(name, top+"/") {
		b.Top = top
	}
	return b
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ReceiveOptions configure a receive link.
type ReceiveOptions struct {
	LinkOptions
	// MaxOpen bounds the uploads a link holds open, started and not finished
	// (default 64): each holds a file. A browser reloaded mid-way leaves its
	// upload open until the same file is picked again or the link ends, or
	// until its place is needed: at the bound, a new upload takes the place
	// of the one quiet longest (no bytes coming) once it has been quiet for
	// EvictQuiet (default 1 minute); that file ends "not sent" and is sent
	// anew if its page comes back. So uploads created and left (by a page,
	// or by someone with the link) keep no one else out; what holds a place
	// is a running upload, at most MaxConnsPerAddr of them per address.
	MaxOpen    int
	EvictQuiet time.Duration
	// MinRate is the least a request sending a file's bytes (a chunk) must
	// deliver in each RateWindow it runs (defaults 64 KiB per 30 s): one
	// slower is ended, what it delivered kept, and the page sends on from
	// there. A request trickling a byte a minute held its upload's place
	// and its connection for as long as it liked (the per-read timeout
	// never fired), so a few addresses could hold every place.
	MinRate    int64
	RateWindow time.Duration
	// MaxFileSize bounds one file (default 1 TiB; the Inbox checks space).
	MaxFileSize int64
	// MaxFolders bounds the folders a link creates in its life (default
	// 100,000): those of the empty folders a page sends (each an upload of
	// no bytes with the "folder" metadata, which takes a place as a file's
	// does, MaxOpen, while it is made) and those of the files' paths, each
	// folder created counted once, those that were there not at all. An
	// upload that could create more than are left (one per element of its
	// path, until it did) is refused (403 ERR_TOO_MANY_FOLDERS), so a
	// hostile page cannot make a million. Before, it counted the empty
	// folders' uploads, each up to 64 levels deep (store.MaxDepth) and so
	// up to 64 folders, and not the files' folders at all.
	MaxFolders int
	// ExpiryGrace is how long the uploads going when the link expires may
	// take to finish after it (default 10 minutes): those with a chunk on
	// its way, or one ended less than EvictQuiet before. Each goes on while
	// its chunks keep coming (one quiet for EvictQuiet is ended); what is
	// left at the grace's end is cut. New uploads are refused at the
	// expiry, as every other request is. Stop and the server's Close cut
	// them at once. Before, the expiry cut a file on its way, however
	// nearly whole, and its partial went.
	ExpiryGrace time.Duration
}

// receiver is a receive link's upload side: a tusd handler over an upload
// table whose bytes go through store.Dest into .partial files.
type receiver struct {
	l       *Link
	inbox   Inbox
	maxOpen int
	maxDirs int           // MaxFolders
	quiet   time.Duration // EvictQuiet
	minRate int64         // MinRate
	window  time.Duration // RateWindow
	grace   time.Duration // ExpiryGrace
	tus     *tusd.Handler
	// graceCtx ends when the uploads let finish after the expiry may go on
	// no more: the grace is over, or the link was stopped or closed.
	graceCtx    context.Context
	graceCancel context.CancelFunc
	graceWake   chan struct{} // a graced upload ended (room for one)

	mu      sync.Mutex // guards the fields below
	uploads map[string]*upload
	open    int
	// dirs are the folders the link's uploads created, and those an upload
	// on its way may still create (reserveDirs), against maxDirs.
	dirs    int
	stopped bool
	// cancelled are the uploads cancelled on this device (CancelUpload),
	// oldest first, at most maxCancelled: the page that asks after one is
	// told so (errCancelledHere), not sent a 404 that has it start the
	// file again as a new upload.
	cancelled []string
	// made are the folders the link's uploads created (files of folders a
	// page sent), taken away again when the link ends if nothing landed
	// in them.
	made []madeFolder
	// finished are the uploads saved here, oldest first, at most
	// maxFinished: the answer that finished one tells its page the name it
	// was saved under (savedAsHeader).
	finished []finishedUpload
	// graced are the uploads going when the link expired, which may
	// finish after it (ExpiryGrace), until each ends or goes quiet.
	graced map[string]*upload
}

// finishedUpload is an upload saved on this device. Asked after (its
// page's answer to the last chunk was lost, and tus-js-client asks where
// the upload stands before it sends on), it is whole: a HEAD answers its
// size as the offset, and the page says it was sent. Before, it was gone
// (404), and tus-js-client sent the whole file again as a new upload,
// which landed a second time, numbered.
type finishedUpload struct {
	id   string
	size int64
	// savedAs is the name it was saved under as the page is told it, in
	// its header's words (savedAsValue), else "".
	savedAs string
}

// GetInfo says the upload is whole (tusd.Upload).
func (f *finishedUpload) GetInfo(ctx context.Context) (tusd.FileInfo, error) {
	return tusd.FileInfo{ID: f.id, Size: f.size, Offset: f.size}, nil
}

// WriteChunk is never asked of a whole upload (tusd answers a PATCH at
// its end itself, and one elsewhere with a wrong offset).
func (f *finishedUpload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	return 0, tusd.ErrMismatchOffset
}

// GetReader is not offered (DisableDownload).
func (f *finishedUpload) GetReader(ctx context.Context) (io.ReadCloser, error) {
	return nil, tusd.ErrNotImplemented
}

// FinishUpload has nothing left to do: the file was saved.
func (f *finishedUpload) FinishUpload(ctx context.Context) error { return nil }

// Terminate leaves a saved file as it is: the page's cancel came too late.
func (f *finishedUpload) Terminate(ctx context.Context) error { return nil }

// maxFinished bounds the finished uploads a receive link remembers (each
// with a name of at most maxSavedAsHeader bytes).
const maxFinished = 256

// savedAsHeader is the header of the answer that finished an upload (its
// last PATCH, or the POST of an empty file) that names, percent-encoded
// (url.PathEscape: the page's decodeURIComponent reads it; a header holds
// no UTF-8), where the file was saved when that is not the name the page
// gave: numbered beside a file of that name ("report (1).pdf"), changed
// by Windows's rules, cut to fit 255 bytes. Before, the page said "sent"
// and its sender never learnt the name.
const savedAsHeader = "Ferry-Saved-As"

// savedAsShown is the name a file was saved under as its page is told it:
// "" when it is the name the page gave (given), or that name with its
// accents composed (Unicode NFC), which looks the same.
func savedAsShown(given, savedAs string) string {
	if savedAs == "" || savedAs == given || safetext.OnlyComposed(given, savedAs) {
		return ""
	}
	return savedAs
}

// maxSavedAsHeader bounds the value of savedAsHeader: a file's name (at
// most 255 bytes, each percent-encoded in at most 3) and a few bytes more.
const maxSavedAsHeader = 1024

// savedAsValue is savedAsHeader's value for a file the page sent as given
// and this device saved as savedAs (both slash-separated), "" when the page
// need not be told (savedAsShown). Where the file's folder is the one the
// page sent it in, only its name is said ("report (1).pdf" of
// "Trip/day 1/report.pdf"); where a folder was named otherwise ("Trip (1)/",
// a file of that name being there), its path, and of a path too long to say
// in maxSavedAsHeader its last elements after "…/". Before, the whole path
// went: a 4096-byte path of accented letters made a header of 12 KB.
func savedAsValue(given, savedAs string) string {
	v := savedAsShown(given, savedAs)
	if v == "" {
		return ""
	}
	if path.Dir(v) == path.Dir(given) {
		v = path.Base(v)
	}
	enc := url.PathEscape(v)
	for len(enc) > maxSavedAsHeader {
		i := strings.IndexByte(v, '/')
		if i < 0 { // no element is this long (store.MaxElementBytes)
			for len(enc) > maxSavedAsHeader {
				_, n := utf8.DecodeLastRuneInString(v)
				v = v[:len(v)-n]
				enc = url.PathEscape(v)
			}
			return enc
		}
		v = v[i+1:]
		enc = url.PathEscape("…/" + v)
	}
	return enc
}

// madeFolder is a folder an upload created in dest (rel: slash-separated).
type madeFolder struct {
	dest *store.Dest
	rel  string
}

// prune removes those of folders that are empty, deepest first.
func prune(folders []madeFolder) {
	slices.SortStableFunc(folders, func(a, b madeFolder) int {
		return strings.Count(b.rel, "/") - strings.Count(a.rel, "/")
	})
	for _, f := range folders {
		f.dest.RemoveFolder(f.rel) // fails, as it should, where something landed
	}
}

// Receive opens a receive link whose files go to inbox.
func (s *Server) Receive(inbox Inbox, opts ReceiveOptions) (*Link, error) {
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = 64
	}
	if opts.MaxFolders <= 0 {
		opts.MaxFolders = 100_000
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = 1 << 40
	}
	if opts.EvictQuiet <= 0 {
		opts.EvictQuiet = time.Minute
	}
	if opts.MinRate <= 0 {
		opts.MinRate = 64 << 10
	}
	if opts.RateWindow <= 0 {
		opts.RateWindow = 30 * time.Second
	}
	if opts.ExpiryGrace <= 0 {
		opts.ExpiryGrace = 10 * time.Minute
	}
	l, err := s.newLink(KindReceive, opts.LinkOptions)
	if err != nil {
		return nil, err
	}
	rc := &receiver{l: l, inbox: inbox, maxOpen: opts.MaxOpen, maxDirs: opts.MaxFolders, quiet: opts.EvictQuiet,
		minRate: opts.MinRate, window: opts.RateWindow, grace: opts.ExpiryGrace,
		uploads: map[string]*upload{}, graceWake: make(chan struct{}, 1)}
	rc.graceCtx, rc.graceCancel = context.WithCancel(context.Background())
	l.recv = rc
	if err := l.open(); err != nil {
		return nil, err
	}
	composer := tusd.NewStoreComposer()
	composer.UseCore(rc)
	composer.UseTerminater(rc)
	composer.UseLocker(interruptingLocker{memorylocker.New(), rc})
	h, err := tusd.NewHandler(tusd.Config{
		StoreComposer:        composer,
		BasePath:             l.Path() + "tus/",
		MaxSize:              opts.MaxFileSize,
		DisableDownload:      true,
		DisableConcatenation: true,
		// The answer that finished an upload names where it was saved.
		PreFinishResponseCallback: rc.finishResponse,
		// Same origin only: the page is served from here.
		Cors:   &tusd.CorsConfig{Disable: true},
		Logger: xslog.New(xslog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		l.end(ErrClosed)
		return nil, fmt.Errorf("weblink: tus: %w", err)
	}
	rc.tus = h
	return l, nil
}

// serve answers the upload page and, under "tus/", the tus protocol.
func (rc *receiver) serve(w http.ResponseWriter, r *http.Request, rest string, dev netip.Addr) {
	if rest == "" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		rc.page(w)
		return
	}
	if rest != "tus" && !strings.HasPrefix(rest, "tus/") {
		notFound(w)
		return
	}
	if err := checkUploadRequest(r.Method, r.Header, r.ContentLength); err != nil {
		http.Error(w, err.Error(), statusOf(err))
		return
	}
	if r.Method == http.MethodHead {
		// A page asking after an upload finished here (its answer to the
		// last chunk was lost) is told the saved name as that answer told it.
		if v := rc.savedAsOf(path.Base(rest)); v != "" {
			w.Header().Set(savedAsHeader, v)
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, ChunkSize)
	ctx := context.WithValue(r.Context(), deviceKey{}, dev)
	ctx = context.WithValue(ctx, connKey{}, http.NewResponseController(w))
	r = r.WithContext(ctx)
	// tusd's router reads the path below its base.
	http.StripPrefix(rc.l.Path()+"tus", rc.tus).ServeHTTP(w, r)
}

// finishResponse adds to the answer that finished an upload the name it
// was saved under, where its page should be told (savedAsHeader).
func (rc *receiver) finishResponse(ev tusd.HookEvent) (tusd.HTTPResponse, error) {
	resp := tusd.HTTPResponse{Header: tusd.HTTPHeader{}}
	if v := rc.savedAsOf(ev.Upload.ID); v != "" {
		resp.Header[savedAsHeader] = v
	}
	return resp, nil
}

// savedAsOf is savedAsHeader's value for the finished upload id, where its
// page should be told the name it was saved under; "" otherwise.
func (rc *receiver) savedAsOf(id string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if f := rc.finishedLocked(id); f != nil {
		return f.savedAs
	}
	return ""
}

// finishedLocked is the finished upload id, or nil (rc.mu held).
func (rc *receiver) finishedLocked(id string) *finishedUpload {
	for i := len(rc.finished) - 1; i >= 0; i-- {
		if rc.finished[i].id == id {
			return &rc.finished[i]
		}
	}
	return nil
}

// deviceKey carries the browser's address to the data store.
type deviceKey struct{}

// connKey carries the request's http.ResponseController to the data
// store, which stops reading a body that comes too slowly (tooSlow).
type connKey struct{}

// Errors checkUploadRequest returns.
var (
	errLengthRequired = errors.New("an upload request needs a Content-Length")
	errChunkTooLarge  = fmt.Errorf("an upload request carries at most %d bytes", ChunkSize)
	errMethod         = errors.New("method not allowed")
)

// checkUploadRequest bounds a tus request before the handler reads it: only
// the methods the page uses, a body only on PATCH (and an empty one on
// POST), always with a Content-Length of at most ChunkSize (an endless or
// chunked body is refused before a byte of it is read).
func checkUploadRequest(method string, h http.Header, length int64) error {
	switch method {
	case http.MethodPost, http.MethodHead, http.MethodDelete, http.MethodOptions:
		if length > 0 || h.Get("Transfer-Encoding") != "" {
			return errChunkTooLarge
		}
	case http.MethodPatch:
		if length < 0 {
			return errLengthRequired
		}
		if length > ChunkSize {
			return errChunkTooLarge
		}
	default:
		return errMethod
	}
	return nil
}

// statusOf is the HTTP status of checkUploadRequest's errors.
func statusOf(err error) int {
	switch {
	case errors.Is(err, errLengthRequired):
		return http.StatusLengthRequired
	case errors.Is(err, errChunkTooLarge):
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusMethodNotAllowed
	}
}

func (rc *receiver) page(w http.ResponseWriter) {
	d := rc.l.s.opts.DeviceName
	render(w, http.StatusOK, "upload", struct {
		pageData
		Endpoint, Until string
		Chunk           int
	}{pageData{Title: "Send files to " + d, Device: d, PIN: rc.l.HasPIN()}, rc.l.Path() + "tus/", rc.l.until(), ChunkSize})
}

// upload is one file a browser sends.
type upload struct {
	rc   *receiver
	a    Arrival
	dest *store.Dest
	t    *tracker
	made []madeFolder // the folders its partial's creation made
	// dirsHeld are the folders reserved for it (reserveDirs) that it has
	// not made yet: an empty folder's until it is made (u.mu held, then
	// rc.mu to give them back).
	dirsHeld int

	cancelled atomic.Bool // CancelUpload: the chunk in flight stops at its next read
	// interrupted: another request for this upload waits for its lock
	// (another tab of the browser took it over): the chunk in flight
	// stops at its next read, its answer tusd's ErrUploadInterrupted.
	interrupted atomic.Bool
	writing     atomic.Pointer[http.ResponseController] // the request whose chunk is written, or nil
	// quietSince is when its last chunk ended (or it was created), in
	// Unix nanoseconds by the link's clock; 0 while a chunk is written.
	quietSince atomic.Int64

	mu      sync.Mutex // guards the fields below; held while a chunk is written
	p       *store.Partial
	offset  int64
	done    bool // finished or discarded
	savedAs string
}

// Errors the data store answers with: tusd sends their message to the page.
var (
	errTooManyOpen = tusd.NewError("ERR_TOO_MANY_UPLOADS", "too many files are being sent at once; wait for some to finish", http.StatusTooManyRequests)
	errNoLength    = tusd.NewError("ERR_LENGTH_REQUIRED", "the file's size must be given", http.StatusBadRequest)
	errFolderSize  = tusd.NewError("ERR_FOLDER_SIZE", "a folder has no bytes to send", http.StatusBadRequest)
	errTooManyDirs = tusd.NewError("ERR_TOO_MANY_FOLDERS", "this link has made as many folders as it makes", http.StatusForbidden)
	// errTooSlow ends a chunk that came slower than MinRate; the page
	// retries (a 5xx) from what arrived.
	errTooSlow = tusd.NewError("ERR_TOO_SLOW", "the file came too slowly; it goes on from where it stopped", http.StatusServiceUnavailable)
	// The page does not retry these (upload.js onShouldRetry).
	errNoSpace    = tusd.NewError("ERR_NO_SPACE", "the receiving device ran out of space", http.StatusInsufficientStorage)
	errSaveFailed = tusd.NewError("ERR_SAVE", "the file could not be saved on the receiving device", http.StatusInternalServerError)
	// errCancelledHere answers a request for an upload cancelled on this
	// device. Its header says so to the page in a HEAD answer too, which
	// has no body: tus-js-client answers any 4xx to its HEAD (a retry
	// begins with one) by starting the file again, unless the page stops
	// it (upload.js onAfterResponse).
	errCancelledHere = func() tusd.Error {
		e := tusd.NewError("ERR_CANCELLED", "cancelled on the receiving device", http.StatusForbidden)
		e.HTTPResponse.Header["Ferry-Upload"] = "cancelled"
		return e
	}()
)

// linkEnded answers an upload request of a link that ended, saying why
// (endedHeader), as its other answers do then.
func (rc *receiver) linkEnded() error {
	e := tusd.NewError("ERR_LINK_ENDED", "this link has ended", http.StatusGone)
	e.HTTPResponse.Header[endedHeader] = endedWord(context0(rc.l))
	return e
}

// maxCancelled bounds the cancelled uploads a receive link remembers.
const maxCancelled = 1024

// refused turns an Inbox refusal into a tusd error carrying its sentence.
func refused(err error) error {
	return tusd.NewError("ERR_REFUSED", refusal(err), http.StatusUnprocessableEntity)
}

// refusal is why a file is refused, as the page shows it: nothing of the
// receiving device's folders (a space refusal gives its figures only, a
// file that could not be created no path).
func refusal(err error) string {
	var ne *store.NameError
	var se *store.SpaceError
	switch {
	case errors.As(err, &ne):
		return "this name cannot be saved: " + ne.Reason
	case errors.As(err, &se):
		return "not enough space on the receiving device: " + se.Figures()
	case errors.Is(err, store.ErrGone):
		return "the receiving device's download folder is gone"
	case errors.Is(err, store.ErrNotWritable):
		return "the receiving device's download folder cannot be written"
	case fileio.DiskFull(err) != "":
		return "the receiving device ran out of space"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) || strings.HasPrefix(err.Error(), "store: ") {
		return "the file could not be saved on the receiving device"
	}
	return err.Error()
}

// localRefusal is why a file is refused, as the receiving device says it:
// with its folder.
func localRefusal(err error) string {
	var ne *store.NameError
	if errors.As(err, &ne) {
		return "this name cannot be saved: " + ne.Reason
	}
	return err.Error()
}

// browserTime reads a file's modification time as the page sends it: the
// milliseconds since 1970 of File.lastModified, in decimal. Anything else,
// or a time before 1970 or past 9999, is no time (the file keeps the time
// it arrived).
func browserTime(ms string) time.Time {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 || n > 253402300799999 {
		return time.Time{}
	}
	return time.UnixMilli(n)
}

// NewUpload creates an upload (tusd.DataStore): the Inbox decides, then the
// partial is created.
func (rc *receiver) NewUpload(ctx context.Context, info tusd.FileInfo) (tusd.Upload, error) {
	if info.SizeIsDeferred {
		return nil, errNoLength
	}
	dev, _ := ctx.Value(deviceKey{}).(netip.Addr)
	folder := info.MetaData["folder"] != ""
	if folder && info.Size != 0 {
		return nil, errFolderSize
	}
	name, err := uploadName(info.MetaData["filename"], info.MetaData["relativepath"])
	if err != nil {
		shown := info.MetaData["relativepath"]
		if shown == "" {
			shown = info.MetaData["filename"]
		}
		rc.refused(Arrival{From: dev, Name: shown, Size: info.Size, Batch: browserBatch(info.MetaData, "")}, err)
		return nil, refused(err)
	}
	id, err := newUploadID()
	if err != nil {
		return nil, err
	}
	// The folders it may create: each above a file, and an empty
	// folder itself. Held until it created them, each then counted.
	dirs := strings.Count(name, "/")
	if folder {
		dirs++
	}
	if !rc.reserveDirs(dirs) {
		rc.refused(Arrival{From: dev, Name: name, Size: info.Size, Batch: browserBatch(info.MetaData, name), Folder: folder},
			errors.New(errTooManyDirs.Message))
		return nil, errTooManyDirs
	}
	if !rc.take() {
		rc.settleDirs(dirs, 0)
		rc.mu.Lock()
		stopped := rc.stopped
		rc.mu.Unlock()
		if stopped {
			return nil, rc.linkEnded()
		}
		return nil, errTooManyOpen
	}
	// The place is held from here; given back when the upload ends or
	// fails below.
	a := Arrival{ID: id, From: dev, Name: name, Size: info.Size, Modified: browserTime(info.MetaData["lastmodified"]),
		Batch: browserBatch(info.MetaData, name), Folder: folder}
	if given := givenName(info.MetaData["filename"], info.MetaData["relativepath"]); given != name {
		a.Given = given
	}
	dest, err := rc.inbox.Arrive(a)
	if err != nil {
		rc.release()
		rc.settleDirs(dirs, 0)
		rc.refused(a, err)
		return nil, refused(err)
	}
	u := &upload{rc: rc, a: a, dest: dest, dirsHeld: dirs}
	if !folder { // a folder is made when it finishes (FinishUpload)
		p, err := dest.CreatePartial(name)
		if err != nil {
			rc.release()
			rc.settleDirs(dirs, 0)
			rc.inbox.Landed(a, "", err)
			return nil, refused(err)
		}
		rc.settleDirs(dirs, len(p.MadeFolders()))
		u.dirsHeld = 0
		p.SparseUpload(info.Size) // its chunks of zeros stay holes
		if pi, ok := rc.inbox.(PartialInbox); ok {
			pi.Began(a, dest.Dir(), p.Name(), p.Identity())
		}
		u.p = p
		for _, m := range p.MadeFolders() {
			u.made = append(u.made, madeFolder{dest, m})
		}
	}
	u.quietSince.Store(rc.l.s.opts.Now().UnixNano())
	rc.mu.Lock()
	if rc.stopped {
		rc.mu.Unlock()
		u.discard()
		rc.release()
		rc.settleDirs(u.dirsHeld, 0)
		rc.inbox.Landed(a, "", context.Cause(rc.l.ctx))
		return nil, rc.linkEnded()
	}
	rc.made = append(rc.made, u.made...)
	rc.uploads[id] = u
	rc.mu.Unlock()
	u.t = rc.l.track(Activity{Device: dev, Upload: true, Name: a.Shown(), Size: info.Size, Folder: folder})
	return u, nil
}

// refused tells an Inbox that hears of refusals (RefusingInbox).
func (rc *receiver) refused(a Arrival, err error) {
	if ri, ok := rc.inbox.(RefusingInbox); ok {
		ri.Refused(a, errors.New(localRefusal(err)))
	}
}

// take takes a place for a new upload: a free one, else that of the upload
// quiet longest, once quiet for rc.quiet (evict). It reports false when
// there is none, or the link stopped.
func (rc *receiver) take() bool {
	for range 3 { // another newcomer may take the place set free first
		rc.mu.Lock()
		if rc.stopped {
			rc.mu.Unlock()
			return false
		}
		if rc.open < rc.maxOpen {
			rc.open++
			rc.mu.Unlock()
			return true
		}
		var quietest *upload
		since := rc.l.s.opts.Now().Add(-rc.quiet).UnixNano()
		for _, u := range rc.uploads {
			if q := u.quietSince.Load(); q != 0 && q <= since && (quietest == nil || q < quietest.quietSince.Load()) {
				quietest = u
			}
		}
		rc.mu.Unlock()
		if quietest == nil || !quietest.evict() {
			return false
		}
	}
	return false
}

// errEvicted ends an upload whose place another file took (take).
var errEvicted = errors.New("nothing came for a while, and another file needed its place (the page sends it anew if it comes back)")

// evict ends u, quiet, to give its place to another upload: its partial
// is removed, and its page, if it comes back, is told the upload is gone
// (404) and sends the file anew. It reports false when u was not quiet
// after all (a chunk is being written) or already ended.
func (u *upload) evict() bool {
	if !u.mu.TryLock() { // a chunk is being written: not quiet
		return false
	}
	defer u.mu.Unlock()
	if u.done || u.quietSince.Load() == 0 {
		return false
	}
	u.done = true
	u.discard()
	u.end("", errEvicted)
	return true
}

// reserveDirs holds n of the folders the link may still create
// (MaxFolders) for an upload that may create up to n; it reports false,
// holding none, when fewer are left.
func (rc *receiver) reserveDirs(n int) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if n > rc.maxDirs-rc.dirs {
		return false
	}
	rc.dirs += n
	return true
}

// settleDirs gives back those of the held folders an upload did not
// create: made of held were.
func (rc *receiver) settleDirs(held, made int) {
	rc.mu.Lock()
	rc.dirs -= held - min(made, held)
	rc.mu.Unlock()
}

func (rc *receiver) release() {
	rc.mu.Lock()
	rc.open--
	rc.mu.Unlock()
}

// uploadName is where a browser's file goes, below the download folder:
// its name (filename, the page's File.name), or for a file of a folder the
// page sent, relpath: the file's path in that folder, its name last
// ("Trip/day 1/IMG_1.jpg", from File.webkitRelativePath or a dropped
// entry's fullPath, whose leading "/" is dropped). Folders merge with
// folders of the same name there, as a Ferry device's do (store.Dest);
// files never overwrite. A backslash, which a Linux or Mac file or folder
// name may hold, is saved as "_" (store.LocalName: "a\b.txt" as
// "a_b.txt"), as a Ferry or LocalSend device's is. Refused, with a
// sentence: a name with a "/" in it, a path that does not end in the name,
// and whatever store.ValidateHere refuses (".." or empty elements, an
// absolute path, over 4096 bytes or too deep, control or bidi characters).
func uploadName(filename, relpath string) (string, error) {
	name := browserName(filename)
	if strings.Contains(name, "/") {
		// A browser sends a file's base name: a path is a trick.
		return "", &store.NameError{Name: name, Reason: "the name has a folder in it", Err: store.ErrBadName}
	}
	if relpath != "" {
		p := store.LocalName(strings.TrimPrefix(relpath, "/"))
		if path.Base(p) != name || strings.HasSuffix(p, "/") {
			return "", &store.NameError{Name: relpath, Reason: "the folder path does not end in the file's name", Err: store.ErrBadName}
		}
		name = p
	}
	if err := store.ValidateHere(name); err != nil {
		return "", err
	}
	return name, nil
}

// givenName is a browser's name for a file as it gave it: its path in its
// folder, else its name.
func givenName(filename, relpath string) string {
	if relpath != "" {
		return strings.TrimPrefix(relpath, "/")
	}
	return filename
}

// browserName makes a name a browser gave for a file storable where it
// would be refused for something its owner cannot help (store.LocalName,
// as for every peer's name): a backslash, everywhere; on Windows the
// characters Windows keeps out of names (a phone allows "Notes: May.txt"),
// a trailing dot or space, a device name. Elsewhere those are stored as
// they are. What else ValidateHere refuses (control or bidi characters,
// invalid UTF-8, an empty or over-long name) stays refused.
func browserName(name string) string {
	if strings.Contains(name, "/") {
		return name // refused as a path by its caller
	}
	return store.LocalName(name)
}

// newUploadID is a random upload ID (128 bits, hex).
func newUploadID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// GetUpload finds an upload of this link (tusd.DataStore).
func (rc *receiver) GetUpload(ctx context.Context, id string) (tusd.Upload, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	u, ok := rc.uploads[id]
	if !ok && !rc.stopped && slices.Contains(rc.cancelled, id) {
		return nil, errCancelledHere
	}
	if !ok && !rc.stopped {
		if f := rc.finishedLocked(id); f != nil {
			c := *f
			return &c, nil
		}
	}
	if !ok || rc.stopped {
		return nil, tusd.ErrNotFound
	}
	return u, nil
}

// AsTerminatableUpload lets the page cancel an upload (tusd.TerminaterDataStore).
func (rc *receiver) AsTerminatableUpload(u tusd.Upload) tusd.TerminatableUpload {
	return u.(tusd.TerminatableUpload)
}

// WriteChunk appends src at offset (tusd checked it against ours).
func (u *upload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		if u.cancelled.Load() {
			return 0, errCancelledHere
		}
		return 0, tusd.ErrNotFound
	}
	if offset != u.offset {
		return 0, tusd.ErrMismatchOffset
	}
	if u.p == nil { // a folder: no bytes (tusd lets none past its size 0)
		return 0, nil
	}
	u.quietSince.Store(0)
	defer func() { u.quietSince.Store(u.rc.l.s.opts.Now().UnixNano()) }()
	u.interrupted.Store(false) // asked of a chunk before this one
	if c, ok := ctx.Value(connKey{}).(*http.ResponseController); ok {
		u.writing.Store(c)
		defer u.writing.Store(nil)
	}
	w := &trackWriter{w: io.NewOffsetWriter(u.p, offset), t: u.t}
	if pi, ok := u.rc.inbox.(ProgressInbox); ok {
		at := offset
		w.progress = func(n int64) {
			at += n
			pi.Progress(u.a, at)
		}
	}
	buf := make([]byte, 256<<10)
	lr := &linkReader{l: u.rc.l, r: src, cancelled: &u.cancelled, interrupted: &u.interrupted,
		graced:  func() bool { return u.rc.inGrace(u.a.ID) },
		minRate: u.rc.minRate, window: u.rc.window}
	lr.markAt = u.rc.l.s.opts.Now()
	n, err := io.CopyBuffer(w, lr, buf)
	u.offset += n
	if err != nil && u.rc.l.ctx.Err() != nil && !u.rc.inGrace(u.a.ID) {
		return n, u.rc.linkEnded()
	}
	if errors.Is(err, errTooSlow) {
		// Nothing more is read from this connection: net/http closes it
		// after the answer rather than reading on what is left of the body.
		if c, ok := ctx.Value(connKey{}).(*http.ResponseController); ok {
			c.SetReadDeadline(time.Now())
		}
		return n, errTooSlow
	}
	if err != nil && u.cancelled.Load() {
		return n, errCancelledHere
	}
	if err != nil && u.interrupted.Load() {
		return n, tusd.ErrUploadInterrupted
	}
	if w.err != nil {
		// This side could not store it (a full disk, a disk error): the
		// file fails here and in the page, which is told not to retry,
		// and what it holds is given back.
		u.done = true
		u.discard()
		cause, page := "the disk is full", errNoSpace
		if full := fileio.DiskFull(w.err); full != "" {
			cause = full
		} else {
			cause, page = pathCause(w.err), errSaveFailed
		}
		u.end("", errors.New("Not saved: "+cause+"."))
		return n, page
	}
	return n, err
}

// pathCause is a storage error's cause without its path: "input/output
// error".
func pathCause(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// GetInfo tells tusd the upload's state.
func (u *upload) GetInfo(ctx context.Context) (tusd.FileInfo, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return tusd.FileInfo{
		ID: u.a.ID, Size: u.a.Size, Offset: u.offset,
		MetaData: tusd.MetaData{"filename": u.a.Name},
	}, nil
}

// GetReader is not offered: uploads are not downloadable (DisableDownload).
func (u *upload) GetReader(ctx context.Context) (io.ReadCloser, error) {
	return nil, tusd.ErrNotImplemented
}

// FinishUpload gives the partial its final name, never overwriting.
func (u *upload) FinishUpload(ctx context.Context) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return nil
	}
	if u.a.Folder {
		// An empty folder: made with the folders above it, by the
		// folder-clash rule (one of the name is merged with).
		savedAs, made, err := u.dest.MakeFolderMade(u.a.Name)
		u.rc.settleDirs(u.dirsHeld, made)
		u.dirsHeld = 0
		u.done = true
		u.savedAs = savedAs
		u.end(savedAs, err)
		if err != nil {
			return errSaveFailed
		}
		return nil
	}
	u.p.SetMeta(store.Meta{ModTime: u.a.Modified})
	savedAs, err := u.dest.Finalize(u.p, u.a.Name, u.a.Size)
	u.done = true
	u.savedAs = savedAs
	if err != nil && savedAs == "" {
		u.discard()
	}
	u.end(savedAs, err)
	if err != nil {
		return errSaveFailed
	}
	return nil
}

// Terminate discards the upload (the page cancelled it).
func (u *upload) Terminate(ctx context.Context) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return nil
	}
	u.done = true
	u.discard()
	u.end("", ErrCancelledInBrowser)
	return nil
}

// discard removes the upload's partial, and the folders it made for it
// when nothing else is in them (u.mu held).
func (u *upload) discard() {
	if u.p != nil {
		u.dest.Discard(u.p)
	}
	prune(slices.Clone(u.made))
}

// end reports the upload's end and gives its place back (u.mu held).
func (u *upload) end(savedAs string, err error) {
	rc := u.rc
	rc.mu.Lock()
	delete(rc.uploads, u.a.ID)
	if rc.graced[u.a.ID] != nil {
		// Still graced (its requests are not cut: the answer that finished
		// it may be on its way); finish counts it ended.
		select {
		case rc.graceWake <- struct{}{}:
		default:
		}
	}
	rc.open--
	rc.dirs -= u.dirsHeld // an empty folder ended before it was made
	u.dirsHeld = 0
	if err == nil && savedAs != "" {
		if len(rc.finished) == maxFinished {
			rc.finished = slices.Delete(rc.finished, 0, 1)
		}
		rc.finished = append(rc.finished, finishedUpload{id: u.a.ID, size: u.a.Size, savedAs: savedAsValue(u.a.Shown(), savedAs)})
	}
	rc.mu.Unlock()
	u.t.done(savedAs, err)
	rc.inbox.Landed(u.a, savedAs, err)
}

// CancelUpload ends one upload of a receive link: its request in flight
// stops, its partial is removed and the page is told it was not sent. It
// reports whether the link had that upload open.
func (l *Link) CancelUpload(id string) bool {
	if l.recv == nil {
		return false
	}
	rc := l.recv
	rc.mu.Lock()
	u, ok := rc.uploads[id]
	if ok {
		delete(rc.uploads, id) // GetUpload no longer finds it: the page is told it was cancelled
		if len(rc.cancelled) == maxCancelled {
			rc.cancelled = slices.Delete(rc.cancelled, 0, 1)
		}
		rc.cancelled = append(rc.cancelled, id)
	}
	rc.mu.Unlock()
	if !ok {
		return false
	}
	u.cancelled.Store(true)
	u.mu.Lock() // waits for a chunk in flight, which stops at its next read
	defer u.mu.Unlock()
	if u.done {
		return false
	}
	u.done = true
	u.discard()
	u.end("", errCancelled)
	return true
}

// errCancelled is an upload cancelled on this device.
var errCancelled = errors.New("cancelled on the receiving device")

// ErrCancelledInBrowser is the end of an upload its page cancelled (tus's
// termination), as Inbox.Landed hears it.
var ErrCancelledInBrowser = errors.New("cancelled in the browser")

// beginGrace picks, as the link expires, the uploads that may finish
// after it (ExpiryGrace): those with a chunk on its way, or one ended less
// than rc.quiet before. It reports whether there are any (l.mu held).
func (rc *receiver) beginGrace() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	since := rc.l.s.opts.Now().Add(-rc.quiet).UnixNano()
	for id, u := range rc.uploads {
		if q := u.quietSince.Load(); q == 0 || q > since {
			if rc.graced == nil {
				rc.graced = map[string]*upload{}
			}
			rc.graced[id] = u
		}
	}
	return len(rc.graced) > 0
}

// inGrace says whether upload id may go on after the link expired.
func (rc *receiver) inGrace(id string) bool {
	if rc.graceCtx.Err() != nil {
		return false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.graced[id] != nil
}

// graceRequest says whether r, a request of the link (rest: its path after
// the token), is one for an upload that may finish after the link expired:
// its chunk (PATCH), where it stands (HEAD) or its page's cancel (DELETE).
func (rc *receiver) graceRequest(r *http.Request, rest string) bool {
	switch r.Method {
	case http.MethodPatch, http.MethodHead, http.MethodDelete:
	default:
		return false
	}
	id, ok := strings.CutPrefix(rest, "tus/")
	return ok && id != "" && !strings.Contains(id, "/") && rc.inGrace(id)
}

// finish waits, once the link expired, for the uploads it lets finish:
// until each ended, or went quiet for rc.quiet (by the link's clock), or
// rc.grace passed, or the link was stopped or closed (cutGrace). Then no
// request of theirs is let in any more (under l.mu, which enter holds).
// The requests in flight are cut when the grace ran out or the link was
// stopped (graceCtx); the answer that finished the last upload is not.
func (rc *receiver) finish() {
	end := time.NewTimer(rc.grace)
	defer end.Stop()
	for rc.graceCtx.Err() == nil {
		rc.mu.Lock()
		now := rc.l.s.opts.Now()
		wait := rc.quiet
		n := 0
		for id, u := range rc.graced {
			if rc.uploads[id] == nil {
				continue // ended
			}
			q := u.quietSince.Load()
			if q == 0 {
				n++ // a chunk is on its way
				continue
			}
			left := time.Unix(0, q).Add(rc.quiet).Sub(now)
			if left <= 0 {
				delete(rc.graced, id) // gone quiet: cut with the others at the end
				continue
			}
			wait = min(wait, left)
			n++
		}
		rc.mu.Unlock()
		if n == 0 {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-rc.graceWake:
		case <-t.C:
		case <-end.C:
			rc.graceCancel()
		case <-rc.graceCtx.Done():
		}
		t.Stop()
	}
	rc.l.mu.Lock()
	rc.mu.Lock()
	rc.graced = nil
	rc.mu.Unlock()
	rc.l.mu.Unlock()
}

// cutGrace ends the grace of the uploads going when the link expired (the
// link was stopped or closed meanwhile): their requests in flight are cut,
// and finish returns.
func (rc *receiver) cutGrace() { rc.graceCancel() }

// stop ends every open upload: each waits for its chunk in flight (which
// stops, its reader seeing the link's end), then its partial is removed.
func (rc *receiver) stop(why error) {
	rc.graceCancel()
	rc.mu.Lock()
	rc.stopped = true
	open := make([]*upload, 0, len(rc.uploads))
	for _, u := range rc.uploads {
		open = append(open, u)
	}
	rc.mu.Unlock()
	for _, u := range open {
		u.mu.Lock()
		if !u.done {
			u.done = true
			u.discard()
			u.end("", why)
		}
		u.mu.Unlock()
	}
	// Folders an upload made that another, discarded later, kept.
	rc.mu.Lock()
	made := rc.made
	rc.made = nil
	rc.mu.Unlock()
	prune(made)
}

// linkReader stops reading an upload's body once the link ended, or once
// it came slower than minRate bytes in a window (by the link's clock,
// window after window from the request's start, checked as each read
// returns: tusd's per-read timeout bounds how long one read may wait).
type linkReader struct {
	l           *Link
	r           io.Reader
	cancelled   *atomic.Bool
	interrupted *atomic.Bool
	graced      func() bool // the upload may finish after the link expired

	minRate int64
	window  time.Duration
	got     int64     // bytes read so far
	markAt  time.Time // when the current window began
	mark    int64     // got then
}

func (r *linkReader) Read(b []byte) (int, error) {
	if err := r.l.ctx.Err(); err != nil && !r.graced() {
		return 0, context.Cause(r.l.ctx)
	}
	if r.cancelled.Load() {
		return 0, errCancelled
	}
	if r.interrupted.Load() {
		return 0, tusd.ErrUploadInterrupted
	}
	n, err := r.r.Read(b)
	r.got += int64(n)
	if r.window > 0 {
		if now := r.l.s.opts.Now(); now.Sub(r.markAt) >= r.window {
			if r.got-r.mark < r.minRate && err == nil {
				return n, errTooSlow
			}
			r.markAt, r.mark = now, r.got
		}
	}
	return n, err
}

// trackWriter counts an upload's bytes for its tracker.
type trackWriter struct {
	w        io.Writer
	t        *tracker
	progress func(n int64) // a ProgressInbox's, or nil
	err      error         // the write's own error (not the reader's)
}

func (w *trackWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	if err != nil {
		w.err = err
	}
	w.t.add(int64(n))
	if w.progress != nil {
		w.progress(int64(n))
	}
	return n, err
}

// FolderInbox is an Inbox that saves into one folder, with the space
// check and safe names, and no refusal of its own: ferry-cli's
// `receive --link`, and tests.
type FolderInbox struct {
	dest *store.Dest

	mu       sync.Mutex // guards the fields below
	reserved int64      // disk of files accepted and not landed yet (whole blocks)
	sizes    map[string]int64
}

// NewFolderInbox opens dir (creating it) as a FolderInbox. Close it after
// the link ended.
func NewFolderInbox(dir string) (*FolderInbox, error) {
	d, err := store.Open(dir)
	if err != nil {
		return nil, err
	}
	return &FolderInbox{dest: d, sizes: map[string]int64{}}, nil
}

// Arrive accepts a file when its name can be stored and it fits beside the
// files already arriving.
func (f *FolderInbox) Arrive(a Arrival) (*store.Dest, error) {
	if err := store.ValidateHere(a.Name); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	need := f.reserved + store.OnDisk(a.Size)
	if err := store.CheckSpace(f.dest.Dir(), need); err != nil {
		var se *store.SpaceError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("not enough space on the receiving device: %s needed, %s free",
				humanSize(need), humanSize(se.Free))
		}
	}
	f.reserved = need
	f.sizes[a.ID] = store.OnDisk(a.Size)
	return f.dest, nil
}

// Landed gives the file's reserved space back.
func (f *FolderInbox) Landed(a Arrival, savedAs string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reserved -= f.sizes[a.ID]
	delete(f.sizes, a.ID)
}

// Dir is the folder files are saved in.
func (f *FolderInbox) Dir() string { return f.dest.Dir() }

// Close closes the folder.
func (f *FolderInbox) Close() error { return f.dest.Close() }

// interruptingLocker is tusd's memory locker, but a request holding an
// upload's lock that another request for the upload waits for (another tab
// of the browser took the file over, a page reloaded while its old request
// hangs on) is stopped by Ferry: its chunk's next read fails, and a read
// it waits in ends at once, its answer tusd's 400 ErrUploadInterrupted,
// which the page retries. tusd's own way, cancelling the request's
// context, has a goroutine read the request's body field while the
// request's handler sets it, unguarded: a data race in tusd v2.9.1
// (handler/context.go:65 against writeChunk's newBodyReader), seen by the
// race detector in TestBrowserTwoTabsOneFile.
type interruptingLocker struct {
	locker *memorylocker.MemoryLocker
	rc     *receiver
}

func (l interruptingLocker) NewLock(id string) (tusd.Lock, error) {
	lk, err := l.locker.NewLock(id)
	if err != nil {
		return nil, err
	}
	return interruptingLock{lk, id, l.rc}, nil
}

type interruptingLock struct {
	inner tusd.Lock
	id    string
	rc    *receiver
}

// Lock takes the upload's lock; while it holds it, a request that waits
// for it interrupts its chunk (tusd's requestRelease is not used).
func (k interruptingLock) Lock(ctx context.Context, _ func()) error {
	return k.inner.Lock(ctx, func() { k.rc.interrupt(k.id) })
}

func (k interruptingLock) Unlock() error { return k.inner.Unlock() }

// interrupt stops the chunk of upload id being written, if one is: at its
// next read, or at once where the request waits to read.
func (rc *receiver) interrupt(id string) {
	rc.mu.Lock()
	u := rc.uploads[id]
	rc.mu.Unlock()
	if u == nil {
		return
	}
	u.interrupted.Store(true)
	if c := u.writing.Load(); c != nil {
		c.SetReadDeadline(time.Now())
	}
}
