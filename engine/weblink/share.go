package weblink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferrydrop/ferry/internal/safetext"
)

// ShareOptions configure a share link.
type ShareOptions struct {
	LinkOptions
	// Once ends the link when the first device has every file (the zip, or
	// each file whole).
	Once bool
	// MaxFiles bounds the files a share takes from the paths given
	// (default MaxShareFiles); more is an error.
	MaxFiles int
}

// MaxShareFiles is how many files a share link takes by default: a photo
// library or a source tree of 10^5 files and more fits, and its table
// holds at most about 90 MB (BenchmarkShareTable).
const MaxShareFiles = 1_000_000

// ErrTooManyFiles means the paths given to Share hold more files than
// ShareOptions.MaxFiles.
var ErrTooManyFiles = errors.New("weblink: too many files to share")

// ErrNothingToShare means the paths given to Share hold no regular file.
var ErrNothingToShare = errors.New("weblink: no file to share")

// pageRows is how many files one page of a share lists: a share of any
// size is listed in pages ("?page=N"), each with at most this many rows and
// thumbnails, so every file can be had by itself, and the zip has them all.
const pageRows = 200

// share is the fixed table of a share link's files. A request names a row
// by its index; each row is opened through the os.Root of the folder it was
// found in, so no name and no symlink planted since reaches outside it.
type share struct {
	l      *Link
	once   bool
	files  []shared
	roots  []shareRoot
	total  int64
	thumbs *thumbs
	made   time.Time // when the link was made
	crcs   zipCRCs   // the CRCs zips computed, for the next zip's ranges
	left   LeftOut   // what the folders hold that the share does not serve

	folders   []folderRun   // each folder that holds files, in the order its first file comes
	rowFolder []uint32      // each row's folder, an index of folders
	search    chan struct{} // held by the search running (one at a time)
}

// LeftOut is what the folders given to a share hold that it does not
// serve: symbolic links (not followed), devices, sockets and pipes, and
// folders that could not be read, with the first few of their paths.
type LeftOut struct {
	Symlinks, Other, Unreadable int
	Examples                    []string // slash paths as the share names them; an unreadable folder's with its cause
}

const maxLeftOutExamples = 5

func (lo *LeftOut) note(what *int, example string) {
	*what++
	if len(lo.Examples) < maxLeftOutExamples {
		lo.Examples = append(lo.Examples, example)
	}
}

// LeftOut says what the share's folders hold that it does not serve (for
// a share link; the zero value for a receive link).
func (l *Link) LeftOut() LeftOut {
	if l.share == nil {
		return LeftOut{}
	}
	lo := l.share.left
	lo.Examples = slices.Clone(lo.Examples)
	return lo
}

// shared is one row of a share: 32 bytes and its name, so a share of 10^6
// files holds about 90 MB (BenchmarkShareTable).
type shared struct {
	name string // as the browser sees it: slash-separated, relative, unique
	size int64  // when shared; a file that changed since is served as it is now
	root uint32 // its folder, an index of share.roots
	at   uint32 // where in name its path inside that folder starts
}

// shareRoot is a folder rows are opened through. A file given by itself is
// opened through its parent folder under its own name (file), which the
// browser may see renamed ("photo (1).jpg" beside another photo.jpg).
type shareRoot struct {
	root *os.Root
	file string
}

// rel is row f's name inside its root, in the OS's form.
func (sh *share) rel(f shared) string {
	if r := sh.roots[f.root]; r.file != "" {
		return r.file
	}
	return filepath.FromSlash(f.name[f.at:])
}

// Share opens a share link for paths (files and folders; a folder is shared
// with every regular file below it, symlinks and special files left out).
// The files are listed before it returns (a big tree takes a while);
// cancelling ctx stops that and opens no link.
func (s *Server) Share(ctx context.Context, paths []string, opts ShareOptions) (*Link, error) {
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = MaxShareFiles
	}
	l, err := s.newLink(KindShare, opts.LinkOptions)
	if err != nil {
		return nil, err
	}
	sh := &share{l: l, once: opts.Once, made: s.opts.Now()}
	if err := sh.add(ctx, paths, opts.MaxFiles); err != nil {
		sh.close()
		return nil, err
	}
	sh.indexFolders()
	sh.search = make(chan struct{}, 1)
	sh.thumbs = newThumbs(sh)
	l.share = sh
	if err := l.open(); err != nil {
		sh.close()
		return nil, err
	}
	// The link's end closes sh (see Link.end), before Stop returns.
	return l, nil
}

func (sh *share) close() {
	for _, r := range sh.roots {
		r.root.Close()
	}
	sh.roots = nil
}

// add fills the table from paths; cancelling ctx stops the walk.
func (sh *share) add(ctx context.Context, paths []string, maxFiles int) error {
	top := map[string]bool{}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("weblink: share %q: %w", p, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return fmt.Errorf("weblink: share: %w", err)
		}
		name := uniqueTop(top, filepath.Base(abs))
		switch {
		case fi.Mode().IsRegular():
			root, err := os.OpenRoot(filepath.Dir(abs))
			if err != nil {
				return fmt.Errorf("weblink: share %q: %w", p, err)
			}
			sh.roots = append(sh.roots, shareRoot{root: root, file: filepath.Base(abs)})
			sh.files = append(sh.files, shared{name: name, size: fi.Size(), root: uint32(len(sh.roots) - 1)})
			sh.total += fi.Size()
		case fi.IsDir():
			root, err := os.OpenRoot(abs)
			if err != nil {
				return fmt.Errorf("weblink: share %q: %w", p, err)
			}
			sh.roots = append(sh.roots, shareRoot{root: root})
			at := shared{root: uint32(len(sh.roots) - 1), at: uint32(len(name) + 1)}
			err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
				if err != nil && rel != "." && d != nil && d.IsDir() {
					// A folder inside that cannot be read is left out,
					// and said, as a send does; the rest is shared.
					why := err.Error()
					if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
						why = pe.Err.Error()
					}
					sh.left.note(&sh.left.Unreadable, name+"/"+rel+" ("+why+")")
					return fs.SkipDir
				}
				if err != nil {
					return err
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				switch {
				case d.IsDir():
					return nil // walked
				case d.Type()&fs.ModeSymlink != 0:
					sh.left.note(&sh.left.Symlinks, name+"/"+rel)
					return nil
				case !d.Type().IsRegular():
					sh.left.note(&sh.left.Other, name+"/"+rel)
					return nil
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				if len(sh.files) >= maxFiles {
					return tooMany(maxFiles)
				}
				f := at
				f.name, f.size = name+"/"+rel, info.Size()
				sh.files = append(sh.files, f)
				sh.total += info.Size()
				return nil
			})
			if errors.Is(err, ErrTooManyFiles) || ctx.Err() != nil {
				return err
			} else if err != nil {
				return fmt.Errorf("weblink: share %q: %w", p, err)
			}
		default:
			return fmt.Errorf("weblink: share %q: not a regular file or folder", p)
		}
		if len(sh.files) > maxFiles {
			return tooMany(maxFiles)
		}
	}
	if len(sh.files) == 0 {
		return ErrNothingToShare
	}
	return nil
}

// tooMany is ErrTooManyFiles with the bound in it.
func tooMany(maxFiles int) error {
	return fmt.Errorf("%w: the paths given hold more than %d files", ErrTooManyFiles, maxFiles)
}

// uniqueTop returns name, or "name (n).ext" when a share already has it at
// the top.
func uniqueTop(seen map[string]bool, name string) string {
	cand := name
	for n := 1; seen[strings.ToLower(cand)]; n++ {
		ext := path.Ext(name)
		cand = strings.TrimSuffix(name, ext) + " (" + strconv.Itoa(n) + ")" + ext
	}
	seen[strings.ToLower(cand)] = true
	return cand
}

// Files lists a share link's files (their names as the browser sees them
// and their sizes), nil for a receive link.
func (l *Link) Files() (names []string, sizes []int64) {
	if l.share == nil {
		return nil, nil
	}
	for _, f := range l.share.files {
		names = append(names, f.name)
		sizes = append(sizes, f.size)
	}
	return names, sizes
}

// FileCount is how many files a share link serves, 0 for a receive link.
func (l *Link) FileCount() int {
	if l.share == nil {
		return 0
	}
	return len(l.share.files)
}

// File is a share link's file i (Files' order): its name as the browser
// sees it and its size; ok is false for no such file.
func (l *Link) File(i int) (name string, size int64, ok bool) {
	if l.share == nil || i < 0 || i >= len(l.share.files) {
		return "", 0, false
	}
	f := l.share.files[i]
	return f.name, f.size, true
}

// serve answers the share's requests: the page, "f/<index>/<name>",
// "t/<index>" (a thumbnail) and "all.zip".
func (sh *share) serve(w http.ResponseWriter, r *http.Request, rest string, dev netip.Addr) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch {
	case rest == "":
		sh.page(w, r)
	case rest == "all.zip":
		sh.serveZip(w, r, dev)
	case strings.HasPrefix(rest, "f/"):
		i, ok := sh.index(strings.TrimPrefix(rest, "f/"), true)
		if !ok {
			notFound(w)
			return
		}
		sh.serveFile(w, r, i, dev)
	case strings.HasPrefix(rest, "t/"):
		i, ok := sh.index(strings.TrimPrefix(rest, "t/"), false)
		if !ok {
			notFound(w)
			return
		}
		sh.thumbs.serve(w, r, i)
	default:
		notFound(w)
	}
}

// index parses "<index>" or "<index>/<name>" (the name is for the browser's
// sake and must be the row's, escaped as in the page) into a row of the table.
func (sh *share) index(s string, named bool) (int, bool) {
	num, name, hasName := strings.Cut(s, "/")
	i, ok := parseIndex(num, len(sh.files))
	if !ok || hasName != named {
		return 0, false
	}
	if named && name != path.Base(sh.files[i].name) {
		return 0, false
	}
	return i, true
}

// parseIndex reads a row number: decimal digits only, no sign or leading
// zero, below n.
func parseIndex(s string, n int) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	i := 0
	for j := 0; j < len(s); j++ {
		c := s[j]
		if c < '0' || c > '9' {
			return 0, false
		}
		i = i*10 + int(c-'0')
	}
	return i, i < n
}

// fileRow is one row of the share page: a file, by its own name, after a
// heading of its folder when the row before is in another (or none). Both
// are shown as safetext.Name shows them, as the app and ferry-cli do: a
// name that could disguise itself (a right-to-left override, a space at
// its end, a line break) is quoted with those characters escaped.
type fileRow struct {
	Index                       int    // in the table
	Folder                      string // the heading before the row, "" for none
	FolderHref                  string // the heading's link to its folder's first page, "" for none
	Name, Size, Href, ThumbHref string
	Thumb                       bool
}

// notInAFolder heads the files shared by themselves that follow a
// folder's on a page.
const notInAFolder = "Not in a folder"

// pages is how many pages list the share's files.
func (sh *share) pages() int { return (len(sh.files) + pageRows - 1) / pageRows }

// parsePage reads the page a share page's query asks for: "page=N", N in
// decimal digits from 1 to pages, no sign or leading zero; no page named is
// page 1. Other parameters are ignored (a link passed through a messenger
// may carry its own); a query that does not parse, or names page twice,
// names no page.
func parsePage(rawQuery string, pages int) (int, bool) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return 0, false
	}
	v, ok := q["page"]
	switch {
	case !ok:
		return 1, pages >= 1
	case len(v) != 1 || v[0] == "0":
		return 0, false
	}
	return parseIndex(v[0], pages+1)
}

// maxShownPage is the longest page number a notice repeats: a longer one
// is said to be past the last without its digits.
const maxShownPage = 12

// nearestPage is the page shown for a query parsePage refused, of pages
// (at least 1), and the sentence that says so: the last for a number past
// it, the first for 0 or anything that is not a number. has begins the
// count of pages ("this share has"). It repeats only a number of at most
// maxShownPage digits, so no text from a link reads as the page's own.
func nearestPage(rawQuery string, pages int, has string) (int, string) {
	unit := "pages"
	if pages == 1 {
		unit = "page"
	}
	has = fmt.Sprintf("%s %d %s", has, pages, unit)
	q, _ := url.ParseQuery(rawQuery) // what parsed of it
	v := q["page"]
	if len(v) != 1 || !allDigits(v[0]) {
		return 1, fmt.Sprintf("That is not a page number: %s. This is the first.", has)
	}
	if len(v[0]) > maxShownPage {
		return pages, fmt.Sprintf("There is no such page: %s. This is the last.", has)
	}
	n, _ := strconv.Atoi(v[0])
	switch {
	case n > pages:
		return pages, fmt.Sprintf("There is no page %d: %s. This is the last.", n, has)
	case n < 1:
		return 1, fmt.Sprintf("There is no page %d: %s. This is the first.", n, has)
	}
	return n, fmt.Sprintf("There is no page %s: %s. This is page %d.", v[0], has, n)
}

// pageNav is a share page's way to the others.
type pageNav struct {
	Page, Pages, First, Last int    // this page, how many, the rows it lists (from 1)
	Prev, Next               string // hrefs, "" on the first and last page
	FirstHref, LastHref      string
	Hidden                   []hiddenField // what the page-number form carries besides the page
	Of                       string        // what the rows are: "Files", "Files found", "Folders"
}

// hiddenField is a form's hidden input.
type hiddenField struct{ Name, Value string }

// pageHref is the href of page p of a share, relative to its pages.
func pageHref(p int) string {
	if p == 1 {
		return "./"
	}
	return "?page=" + strconv.Itoa(p)
}

// view is what a share page lists: every file, the files a search finds,
// or the folders.
type view struct {
	search  string // the files whose path has it, "" for every file
	folders bool   // the folders, not the files
}

// href is the href of page p of the view.
func (v view) href(p int) string {
	var q string
	switch {
	case v.folders:
		q = "?folders=1"
	case v.search != "":
		q = "?q=" + url.QueryEscape(v.search)
	default:
		return pageHref(p)
	}
	if p > 1 {
		q += "&page=" + strconv.Itoa(p)
	}
	return q
}

// hidden is what the view's page-number form carries besides the page.
func (v view) hidden() []hiddenField {
	switch {
	case v.folders:
		return []hiddenField{{"folders", "1"}}
	case v.search != "":
		return []hiddenField{{"q", v.search}}
	}
	return nil
}

// page answers the page of the share that r's query names: of every file,
// of the files a search (?q=) finds, or of the folders (?folders=1). Each
// has at most pageRows rows, so its work on this device and in the browser
// is bounded whatever the share holds (a search reads every name once,
// one search of the link at a time).
func (sh *share) page(w http.ResponseWriter, r *http.Request) {
	rawQuery := r.URL.RawQuery
	code, notice := http.StatusOK, ""
	var v view
	if askedFolders(rawQuery) {
		v.folders = true
	} else if q, bad := parseSearch(rawQuery); bad != "" {
		// Every file's first page, saying why.
		notice, rawQuery = bad, ""
	} else {
		v.search = q
	}
	total, has := len(sh.files), "this share has"
	var found []int // the rows of the page asked for, when searching
	switch {
	case v.folders:
		total, has = len(sh.folders), "the folders fill"
	case v.search != "":
		release, ok := sh.searchSlot(r)
		if !ok {
			return // the request went away
		}
		defer release()
		want, _ := parsePage(rawQuery, maxPages)
		found, total = sh.find(v.search, want)
		has = "the files found fill"
	}
	pages := max(1, (total+pageRows-1)/pageRows)
	p, ok := parsePage(rawQuery, pages)
	if !ok {
		// A page that is not there (mistyped, a bookmark of a share made
		// again with fewer files): the nearest that is, saying so, under
		// a 404 (there is no such page), rather than a page of no files.
		p, notice = nearestPage(rawQuery, pages, has)
		code = http.StatusNotFound
		if v.search != "" {
			found, _ = sh.find(v.search, p)
		}
	}
	from := (p - 1) * pageRows
	to := min(total, from+pageRows)
	var rows []fileRow
	var folders []folderRow
	switch {
	case v.folders:
		folders = sh.folderRows(from, to)
	case v.search != "":
		rows = sh.rows(found, p, true)
	default:
		idx := make([]int, 0, to-from)
		for i := from; i < to; i++ {
			idx = append(idx, i)
		}
		rows = sh.rows(idx, p, false)
	}
	nav := pageNav{Page: p, Pages: pages, First: from + 1, Last: to, Hidden: v.hidden(), Of: "Files"}
	switch {
	case v.folders:
		nav.Of = "Folders"
	case v.search != "":
		nav.Of = "Files found"
	}
	if p > 1 {
		nav.Prev, nav.FirstHref = v.href(p-1), v.href(1)
	}
	if p < nav.Pages {
		nav.Next, nav.LastHref = v.href(p+1), v.href(nav.Pages)
	}
	shown := ""
	if v.search != "" {
		shown = "“" + v.search + "”"
		if safetext.NeedsEscape(v.search) {
			shown = safetext.Name(v.search)
		}
	}
	render(w, code, "share", struct {
		pageData
		Count                int
		Total, Until, Notice string
		ZipHref              string
		Files                []fileRow
		Nav                  pageNav
		Many                 bool   // more files than a page: the search and the folders are offered
		Search, Shown        string // the search, and as the page shows it
		Found                int    // how many files the search found
		FolderCount          int
		FolderView           bool
		Folders              []folderRow
	}{
		pageData{Title: "Files from " + sh.l.s.opts.DeviceName, Device: sh.l.s.opts.DeviceName, PIN: sh.l.HasPIN()},
		len(sh.files), humanSize(sh.total), sh.l.until(), notice, "all.zip", rows, nav,
		len(sh.files) > pageRows, v.search, shown, total, len(sh.folders), v.folders, folders,
	})
}

// rows are the page's rows of the files idx (in the table's order) on page
// p of a view: a heading above a row whose folder is not the row before's,
// and a link in the heading to the folder's first page of every file
// where that is another page, or the view is a search's.
func (sh *share) rows(idx []int, p int, search bool) []fileRow {
	rows := make([]fileRow, 0, len(idx))
	folder := "" // the folder of the row before
	for n, i := range idx {
		f := sh.files[i]
		dir, base := "", f.name
		if j := strings.LastIndexByte(f.name, '/'); j >= 0 {
			dir, base = f.name[:j], f.name[j+1:]
		}
		row := fileRow{
			Index: i, Name: safetext.Name(base), Size: humanSize(f.size),
			Href:  "f/" + strconv.Itoa(i) + "/" + url.PathEscape(path.Base(f.name)),
			Thumb: isPicture(f.name), ThumbHref: "t/" + strconv.Itoa(i),
		}
		if n == 0 || dir != folder {
			row.Folder = safetext.Name(dir)
			if dir == "" {
				row.Folder = notInAFolder
			}
			if first := int(sh.folders[sh.rowFolder[i]].first); search || first/pageRows+1 != p {
				row.FolderHref = folderHref(first)
			}
		}
		folder = dir
		rows = append(rows, row)
	}
	return rows
}

// open opens row i through its Root, refusing anything but a regular file.
func (sh *share) open(i int) (*os.File, os.FileInfo, error) {
	f := sh.files[i]
	file, err := sh.roots[f.root].root.Open(sh.rel(f))
	if err != nil {
		return nil, nil, err
	}
	fi, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		file.Close()
		return nil, nil, fmt.Errorf("%s is no longer a regular file", f.name)
	}
	return file, fi, nil
}

// serveFile answers one file, with ranges (http.ServeContent).
func (sh *share) serveFile(w http.ResponseWriter, r *http.Request, i int, dev netip.Addr) {
	file, fi, err := sh.open(i)
	if err != nil {
		sh.l.s.opts.Logger.Debug("weblink: open shared file", "err", err)
		page(w, http.StatusNotFound, "File gone", "This file is no longer there on the sharing device.")
		return
	}
	defer file.Close()
	name := path.Base(sh.files[i].name)
	w.Header().Set("Content-Disposition", attachment(name))
	if r.Method == http.MethodHead {
		http.ServeContent(w, r, name, fi.ModTime(), file)
		return
	}
	t := sh.l.track(Activity{Device: dev, Name: sh.files[i].name, Size: fi.Size()})
	cw := &countingWriter{ResponseWriter: w, t: t}
	http.ServeContent(cw, r, name, fi.ModTime(), &ctxReadSeeker{ctx: sh.l.ctx, rs: file, req: r.Context()})
	// The answer ended where it was to end (the whole file, or the range
	// asked for), and whether the device now has every byte of the file.
	from, complete := answered(cw, fi.Size())
	has := complete && sh.got(dev, i, fmt.Sprint(fi.Size(), fi.ModTime().UnixNano()), fi.Size(), from, cw.n)
	t.done(sh.files[i].name, sh.stoppedWhy(cw, complete, nil))
	if has {
		sh.finished(dev, i)
	}
}

// answered reads a file's (or the zip's) answer of size bytes: where its
// body began, and whether it carried all it was to carry (a 200 with every
// byte, a 206 with its whole range).
func answered(cw *countingWriter, size int64) (from int64, complete bool) {
	switch cw.status {
	case http.StatusOK:
		return 0, cw.n == size
	case http.StatusPartialContent:
		first, last, ok := contentRange(cw.Header().Get("Content-Range"))
		return first, ok && cw.n == last-first+1
	}
	return 0, false
}

// stoppedWhy is why an answer did not finish, for its activity: nil when it
// did, or was no download (a 304); a range past the end (416); the link's end; err (a file that
// changed under a zip) when known; else the download stopped (the browser
// went away).
func (sh *share) stoppedWhy(cw *countingWriter, complete bool, err error) error {
	switch {
	case cw.status == http.StatusRequestedRangeNotSatisfiable:
		return errors.New("it asked for bytes past the end")
	case complete || cw.status >= 300:
		return nil
	case sh.l.ctx.Err() != nil && !errors.Is(context.Cause(sh.l.ctx), ErrOnce):
		return context.Cause(sh.l.ctx)
	case err != nil:
		return err
	}
	return errors.New("the download stopped before the end")
}

// contentRange reads a 206's "bytes first-last/size".
func contentRange(cr string) (first, last int64, ok bool) {
	spec, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, 0, false
	}
	rng, _, _ := strings.Cut(spec, "/")
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, false
	}
	f, err1 := strconv.ParseInt(a, 10, 64)
	l, err2 := strconv.ParseInt(b, 10, 64)
	return f, l, err1 == nil && err2 == nil && f <= l
}

// got notes that an answer carried the bytes [from, from+n) of file i (i <
// 0: the zip), as it is in version (its size and time, the zip's ETag), to
// dev, and reports whether dev now has every byte of it: a download whole,
// or in ranges (a resumed one, a download manager's segments) that cover
// it. A range that ends at the last byte is not the file.
func (sh *share) got(dev netip.Addr, i int, version string, size, from, n int64) bool {
	if n <= 0 && size > 0 {
		return false
	}
	l := sh.l
	l.mu.Lock()
	defer l.mu.Unlock()
	k := partKey{dev, i}
	c := l.parts[k]
	if c == nil || c.version != version {
		if len(l.parts) >= maxParts {
			clear(l.parts) // bounded; a device then downloads anew to count
		}
		c = &coverage{version: version}
		l.parts[k] = c
	}
	c.add(from, from+n)
	if !c.covers(size) {
		return false
	}
	delete(l.parts, k)
	return true
}

// partKey is a device's download of a share's file (-1: the zip).
type partKey struct {
	dev netip.Addr
	row int
}

// maxParts bounds the downloads a link keeps the ranges of.
const maxParts = 4096

// coverage is the spans of a file one device got, merged, in order; a
// device that asks for more than maxSpans separate ones keeps the first.
type coverage struct {
	version string
	spans   [][2]int64
}

const maxSpans = 64

func (c *coverage) add(lo, hi int64) {
	if hi <= lo {
		return
	}
	out := make([][2]int64, 0, len(c.spans)+1)
	placed := false
	for _, s := range c.spans {
		switch {
		case s[1] < lo: // before, not touching
			out = append(out, s)
		case hi < s[0]: // after
			if !placed {
				out, placed = append(out, [2]int64{lo, hi}), true
			}
			out = append(out, s)
		default: // overlapping or touching: merged into the new one
			lo, hi = min(lo, s[0]), max(hi, s[1])
		}
	}
	if !placed {
		out = append(out, [2]int64{lo, hi})
	}
	if len(out) > maxSpans {
		return
	}
	c.spans = out
}

// covers reports whether the spans hold every byte of a file of size.
func (c *coverage) covers(size int64) bool {
	if size == 0 {
		return true
	}
	return len(c.spans) == 1 && c.spans[0][0] <= 0 && c.spans[0][1] >= size
}

// finished notes that dev has file i whole (i < 0: the zip, every file),
// and ends a one-time link once a device has everything.
func (sh *share) finished(dev netip.Addr, i int) {
	l := sh.l
	l.mu.Lock()
	got := l.doneBy[dev]
	if got == nil {
		got = map[int]bool{}
		l.doneBy[dev] = got
	}
	all := i < 0
	if !all {
		got[i] = true
		all = len(got) == len(sh.files)
	}
	l.mu.Unlock()
	if all && sh.once {
		// Not from inside this request: end waits for requests.
		go l.end(ErrOnce)
	}
}

// zipName is the name the zip is saved under.
func (sh *share) zipName() string {
	if len(sh.files) == 1 {
		return strings.TrimSuffix(path.Base(sh.files[0].name), path.Ext(sh.files[0].name)) + ".zip"
	}
	top, _, _ := strings.Cut(sh.files[0].name, "/")
	for _, f := range sh.files[1:] {
		if t, _, _ := strings.Cut(f.name, "/"); t != top {
			return "Files from " + sh.l.s.opts.DeviceName + ".zip"
		}
	}
	return top + ".zip"
}

// serveZip answers every file as one zip, stored (not recompressed: most
// of what people share is compressed already, and storing keeps the CPU out
// of the way), straight from the files: no temporary copy. Its size is known
// ahead and it resumes by range while the files stay as they are (see
// zipPlan); a request for several ranges at once gets the whole zip.
func (sh *share) serveZip(w http.ResponseWriter, r *http.Request, dev netip.Addr) {
	plan, err := sh.planZip(sh.l.ctx)
	if err != nil {
		page(w, http.StatusGone, "Link ended", "This link has ended.")
		return
	}
	name := sh.zipName()
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", attachment(name))
	w.Header().Set("ETag", plan.etag)
	if strings.Contains(r.Header.Get("Range"), ",") {
		r.Header.Del("Range")
	}
	zs := &zipStream{sh: sh, plan: plan, ctx: sh.l.ctx, req: r.Context()}
	if r.Method == http.MethodHead {
		http.ServeContent(w, r, name, time.Time{}, zs)
		return
	}
	t := sh.l.track(Activity{Device: dev, Name: name, Zip: true, Size: plan.size})
	cw := &countingWriter{ResponseWriter: w, t: t}
	http.ServeContent(cw, r, name, time.Time{}, zs)
	from, complete := answered(cw, plan.size)
	has := complete && sh.got(dev, -1, plan.etag, plan.size, from, cw.n)
	var why error
	if r.Context().Err() == nil {
		why = zs.err // a file that changed, or could not be read
	}
	t.leftOut(plan.missing)
	t.done(name, sh.stoppedWhy(cw, complete, why))
	if has {
		sh.finished(dev, -1)
	}
}

// notIncludedName is the zip's note of the files it lacks (writeZip).
const notIncludedName = "NOT INCLUDED.txt"

// zipEntryName makes a row's name safe as a zip entry for any unzipper: no
// leading slash, no "." or ".." elements, no backslashes, no drive letter.
// Rows come from a walk of real folders, so this only guards against odd
// local names ("a\b" on Linux).
func zipEntryName(name string) string {
	elems := strings.Split(name, "/")
	out := elems[:0]
	for _, e := range elems {
		e = zipUnsafe.Replace(e)
		if e == "" || e == "." || e == ".." {
			continue
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return "file"
	}
	return strings.Join(out, "/")
}

// zipUnsafe replaces what unzip tools take for a folder or a drive.
var zipUnsafe = strings.NewReplacer("\\", "_", ":", "_")

// countingWriter counts the body bytes of an answer for its tracker.
type countingWriter struct {
	http.ResponseWriter
	t      *tracker
	n      int64
	status int
}

func (c *countingWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	c.t.add(int64(n))
	return n, err
}

// sendSlice is how much of a file one sendfile call moves before the link's
// end and the progress are looked at again.
const sendSlice = 4 << 20

// ReadFrom lets a file reach the connection the way http.FileServer's does
// (sendfile on Linux, no copy through user space) in slices of sendSlice,
// checking the link and counting progress between them. A reader that is
// not one of the share's files is copied as usual.
func (c *countingWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := c.ResponseWriter.(io.ReaderFrom)
	limit := int64(-1)
	if lr, isLimited := src.(*io.LimitedReader); isLimited {
		limit, src = lr.N, lr.R
	}
	if zs, isZip := src.(*zipStream); isZip {
		if c.status == 0 {
			c.status = http.StatusOK
		}
		return zs.writeTo(writerOnly{c}, limit)
	}
	cr, isFile := src.(*ctxReadSeeker)
	var f *os.File
	if isFile {
		f, isFile = cr.rs.(*os.File)
	}
	if !ok || !isFile {
		if limit >= 0 {
			src = io.LimitReader(src, limit)
		}
		return io.Copy(writerOnly{c}, src)
	}
	if c.status == 0 {
		c.status = http.StatusOK
	}
	var total int64
	for limit != 0 {
		if err := cr.err(); err != nil {
			return total, err
		}
		n := int64(sendSlice)
		if limit > 0 {
			n = min(n, limit)
		}
		m, err := rf.ReadFrom(io.LimitReader(f, n))
		total += m
		c.n += m
		c.t.add(m)
		if limit > 0 {
			limit -= m
		}
		if err != nil || m < n {
			return total, err
		}
	}
	return total, nil
}

// writerOnly hides a writer's ReadFrom, so io.Copy does not call it again.
type writerOnly struct{ io.Writer }

// ctxReadSeeker stops reading once the link ended or the request went away.
type ctxReadSeeker struct {
	ctx, req context.Context
	rs       io.ReadSeeker
}

func (c *ctxReadSeeker) Read(b []byte) (int, error) {
	if err := c.err(); err != nil {
		return 0, err
	}
	return c.rs.Read(b)
}

// err says why reading must stop, or nil. A one-time link that ended (its
// first device has everything) lets the answers in flight finish, as
// Link.enter does: another download of that device, or of another.
func (c *ctxReadSeeker) err() error {
	if err := c.ctx.Err(); err != nil && !errors.Is(context.Cause(c.ctx), ErrOnce) {
		return context.Cause(c.ctx)
	}
	return c.req.Err()
}

func (c *ctxReadSeeker) Seek(off int64, whence int) (int64, error) { return c.rs.Seek(off, whence) }

// isPicture says whether a name looks like a picture a thumbnail is made of.
func isPicture(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".jpg", ".jpeg", ".png", ".gif", ".webp":
		return true
	}
	return false
}
