package weblink

import (
	"bytes"
	"context"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/engine/store"
)

func FuzzParseLinkPath(f *testing.F) {
	tok, _ := newToken()
	for _, s := range []string{"/l/" + tok + "/", "/l/" + tok, "/l/" + tok + "/f/0/a", "/l/../", "/l//", "/a/x", "", "/l/" + strings.ToUpper(tok) + "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tok, rest, err := parseLinkPath(p)
		if err != nil {
			return
		}
		if len(tok) != tokenLen || strings.Trim(tok, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("token %q accepted", tok)
		}
		if p != "/l/"+tok && p != "/l/"+tok+"/"+rest {
			t.Fatalf("%q split into %q and %q", p, tok, rest)
		}
	})
}

func FuzzParseIndex(f *testing.F) {
	for _, s := range []string{"0", "1", "00", "-1", "+1", "999999999", "1000000000", "", "1a", "٣"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		i, ok := parseIndex(s, n)
		if !ok {
			return
		}
		if i < 0 || i >= n || strconv.Itoa(i) != s {
			t.Fatalf("parseIndex(%q, %d) = %d", s, n, i)
		}
	})
}

// pageQueries are the cases of the share page's query, for
// TestParsePage, TestNearestPage and the seeds of FuzzParsePage and
// FuzzNearestPage: the page it names in a share of 7 pages, 0 for none,
// and the page shown for it.
var pageQueries = []struct {
	q          string
	page, near int // near: the page shown where it names none (nearestPage)
}{
	{"", 1, 1},
	{"page=1", 1, 1},
	{"page=7", 7, 7},
	{"page=3&utm_source=chat", 3, 3}, // other parameters ignored
	{"fbclid=x", 1, 1},
	{"page=8", 0, 7},  // past the last
	{"page=0", 0, 1},  // pages count from 1
	{"page=-1", 0, 1}, // no sign
	{"page=+1", 0, 1},
	{"page=01", 0, 1}, // no leading zero
	{"page=03", 0, 3},
	{"page=", 0, 1},
	{"page", 0, 1},
	{"page=1&page=2", 0, 1}, // named twice
	{"page=1&page=1", 0, 1},
	{"page=1.0", 0, 1},
	{"page=1e0", 0, 1},
	{"page=0x1", 0, 1},
	{"page=%31", 1, 1}, // "1", escaped
	{"page=%", 0, 1},   // a broken escape
	{"page=%00", 0, 1},
	{"page=1%00", 0, 1},
	{"page=١", 0, 1}, // an Arabic-Indic digit
	{"page=99999999999999999999", 0, 7},
	{"page=1000000000", 0, 7},
	{"page=" + strings.Repeat("9", 4096), 0, 7},
	{"page=1;page=2", 0, 1}, // ";" does not separate
	{"PAGE=2", 1, 1},        // another parameter
	{"page=2 ", 0, 1},
	{"page=%202", 0, 1},
}

func TestParsePage(t *testing.T) {
	for _, c := range pageQueries {
		p, ok := parsePage(c.q, 7)
		if !ok {
			p = 0
		}
		if p != c.page {
			t.Errorf("parsePage(%q) = %d, %v; want %d", c.q, p, ok, c.page)
		}
	}
}

func TestNearestPage(t *testing.T) {
	for _, c := range pageQueries {
		if c.page != 0 {
			continue
		}
		if p, notice := nearestPage(c.q, 7, "this share has"); p != c.near || !strings.Contains(notice, "this share has 7 pages") {
			t.Errorf("nearestPage(%q) = %d, %q; want page %d", c.q, p, notice, c.near)
		}
	}
}

// nearestNotices are nearestPage's sentences without their digits: a
// notice is one of them, so nothing but a number comes from the query.
var nearestNotices = []string{
	"That is not a page number: this share has  pages. This is the first.",
	"There is no such page: this share has  pages. This is the last.",
	"There is no page : this share has  pages. This is the last.",
	"There is no page : this share has  pages. This is the first.",
	"There is no page : this share has  pages. This is page .",
}

func FuzzNearestPage(f *testing.F) {
	for _, c := range pageQueries {
		f.Add(c.q, 7)
	}
	f.Fuzz(func(t *testing.T, q string, pages int) {
		if pages < 2 || pages > 1<<24 {
			return
		}
		p, notice := nearestPage(q, pages, "this share has")
		if p < 1 || p > pages {
			t.Fatalf("nearestPage(%q, %d) = %d", q, pages, p)
		}
		bare := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return -1
			}
			return r
		}, notice)
		if !slices.Contains(nearestNotices, bare) {
			t.Fatalf("nearestPage(%q, %d) says %q", q, pages, notice)
		}
	})
}

// searchQueries are the cases of a share page's search, for
// TestParseSearch and FuzzParseSearch's seeds: the search, or whether it
// is refused.
var searchQueries = []struct {
	q, search string
	bad       bool
}{
	{"", "", false},
	{"page=2", "", false},
	{"q=img", "img", false},
	{"q=IMG_1100&page=2", "IMG_1100", false},
	{"q=+day+1+", "day 1", false}, // spaces at the ends dropped
	{"q=", "", false},
	{"q", "", false},
	{"q=%E2%80%AEgpj", "\u202egpj", false}, // searched as it is, shown escaped
	{"q=%3Cscript%3E", "<script>", false},  // text, escaped in the page
	{"q=a&q=b", "", true},                  // named twice
	{"q=a%00b", "", true},                  // a control character
	{"q=a%0Ab", "", true},
	{"q=%FF", "", true}, // not UTF-8
	{"q=" + strings.Repeat("a", maxSearchBytes), strings.Repeat("a", maxSearchBytes), false},
	{"q=" + strings.Repeat("a", maxSearchBytes+1), "", true},
	{"q=%", "", false}, // a broken escape: no search named
	{"Q=a", "", false}, // another parameter
	{"q=a;q=b", "", false},
}

func TestParseSearch(t *testing.T) {
	for _, c := range searchQueries {
		search, bad := parseSearch(c.q)
		if search != c.search || (bad != "") != c.bad {
			t.Errorf("parseSearch(%q) = %q, %q; want %q, refused %v", c.q, search, bad, c.search, c.bad)
		}
	}
}

func FuzzParseSearch(f *testing.F) {
	for _, c := range searchQueries {
		f.Add(c.q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		search, bad := parseSearch(q)
		if bad != "" && search != "" {
			t.Fatalf("parseSearch(%q) = %q and refused", q, search)
		}
		if len(search) > maxSearchBytes || !utf8.ValidString(search) || strings.ContainsFunc(search, unicode.IsControl) || strings.TrimSpace(search) != search {
			t.Fatalf("parseSearch(%q) = %q", q, search)
		}
		if v, _ := url.ParseQuery(q); search != "" && strings.TrimSpace(v.Get("q")) != search {
			t.Fatalf("parseSearch(%q) = %q, not its q", q, search)
		}
	})
}

func FuzzParsePage(f *testing.F) {
	for _, c := range pageQueries {
		f.Add(c.q, 7)
	}
	f.Fuzz(func(t *testing.T, q string, pages int) {
		p, ok := parsePage(q, pages)
		if !ok {
			return
		}
		if p < 1 || p > pages {
			t.Fatalf("parsePage(%q, %d) = %d", q, pages, p)
		}
		if v, _ := url.ParseQuery(q); v.Has("page") && v.Get("page") != strconv.Itoa(p) {
			t.Fatalf("parsePage(%q, %d) = %d", q, pages, p)
		}
	})
}

func FuzzAttachment(f *testing.F) {
	for _, s := range []string{"a.txt", "grüße.txt", `a"b`, "a\r\nb", "100%", "", "../x", "\xff\xfe", "a;b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		v := attachment(name)
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				t.Fatalf("attachment(%q) = %q: byte %#x", name, v, v[i])
			}
		}
		disp, params, err := mime.ParseMediaType(v)
		if err != nil || disp != "attachment" || params["filename"] == "" {
			t.Fatalf("attachment(%q) = %q: %v %v", name, v, err, params)
		}
		// mime reads filename* over filename: look at the fallback alone.
		fallback, _, _ := strings.Cut(v, "; filename*=")
		_, fp, err := mime.ParseMediaType(fallback)
		if err != nil || strings.ContainsAny(fp["filename"], "/\\\"") {
			t.Fatalf("attachment(%q): fallback %q: %v", name, fp["filename"], err)
		}
		if utf8.ValidString(name) && !strings.Contains(name, "/") && name != "" && name != "." && params["filename"] != name {
			t.Fatalf("attachment(%q) reads back as %q", name, params["filename"])
		}
	})
}

// FuzzRequest sends arbitrary requests (method, path, headers, body) to a
// server holding a share and a receive link: whatever comes, the answer
// carries the security headers, nothing outside the share is served, and
// nothing but partials lands in the receiving folder.
func FuzzRequest(f *testing.F) {
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte(secret), 0o644)
	os.MkdirAll(filepath.Join(dir, "shared"), 0o755)
	os.WriteFile(filepath.Join(dir, "shared", "a.png"), []byte("not a png"), 0o644)
	os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(dir, "shared", "ln"))
	recvDir := filepath.Join(dir, "in")
	in, err := NewFolderInbox(recvDir)
	if err != nil {
		f.Fatal(err)
	}
	// ServeHTTP is called directly: no listener, no connections.
	s := &Server{opts: Options{}.withDefaults(), links: map[string]*Link{}, ended: map[string]error{}}
	share, err := s.Share(context.Background(), []string{filepath.Join(dir, "shared")}, ShareOptions{LinkOptions: LinkOptions{MaxDevices: 1 << 20}})
	if err != nil {
		f.Fatal(err)
	}
	recv, err := s.Receive(in, ReceiveOptions{LinkOptions: LinkOptions{MaxDevices: 1 << 20}, MaxOpen: 256})
	if err != nil {
		f.Fatal(err)
	}
	go func() {
		for range share.Events() {
		}
	}()
	go func() {
		for range recv.Events() {
		}
	}()
	f.Cleanup(func() {
		share.Stop()
		recv.Stop()
		in.Close()
	})
	sp, rp := share.Path(), recv.Path()
	for _, c := range []struct{ m, p, h, b string }{
		{"GET", sp, "", ""},
		{"GET", sp + "?page=1", "", ""},
		{"GET", sp + "?page=2&page=1", "", ""},
		{"GET", sp + "?q=A.PNG&page=1", "", ""},
		{"GET", sp + "?folders=1&page=1", "", ""},
		{"GET", sp + "f/0/a.png", "Range: bytes=0-2", ""},
		{"GET", sp + "t/0", "", ""},
		{"GET", sp + "all.zip", "", ""},
		{"POST", sp + "pin", "Content-Type: application/x-www-form-urlencoded", "pin=1"},
		{"POST", sp + "pin", "Content-Type: application/x-www-form-urlencoded", "pin=1&page=2"},
		{"POST", sp + "pin", "Content-Type: application/x-www-form-urlencoded", "pin=1&q=a.png&folders=1&page=2"},
		{"GET", rp, "", ""},
		{"POST", rp + "tus/", "Tus-Resumable: 1.0.0\nUpload-Length: 3\nUpload-Metadata: filename YS50eHQ=", ""},
		{"POST", rp + "tus/", "Tus-Resumable: 1.0.0\nUpload-Length: 0\nUpload-Metadata: filename ZQ==,relativepath YS9l,folder MQ==", ""}, // an empty folder, a/e
		{"PATCH", rp + "tus/00", "Tus-Resumable: 1.0.0\nUpload-Offset: 0\nContent-Type: application/offset+octet-stream", "abc"},
		{"HEAD", rp + "tus/x", "Tus-Resumable: 1.0.0", ""},
	} {
		f.Add(c.m, c.p, c.h, c.b)
	}
	f.Fuzz(func(t *testing.T, method, p, hdrs, body string) {
		if !validMethod(method) || !strings.HasPrefix(p, "/") || !utf8.ValidString(p) {
			return
		}
		req := httptest.NewRequest(http.MethodGet, "/", strings.NewReader(body))
		req.Method = method
		req.URL.Path, req.URL.RawQuery, _ = strings.Cut(p, "?")
		req.RemoteAddr = "192.0.2.1:1234"
		for _, line := range strings.Split(hdrs, "\n") {
			k, v, ok := strings.Cut(line, ": ")
			if ok && k != "" {
				req.Header.Set(k, v)
			}
		}
		req.ContentLength = int64(len(body))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Header().Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("%s %q: security headers missing: %v", method, p, w.Header())
		}
		if bytes.Contains(w.Body.Bytes(), []byte(secret)) {
			t.Fatalf("%s %q served the secret", method, p)
		}
		ents, _ := os.ReadDir(recvDir)
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".partial") && e.Name() != "a.txt" && !strings.HasPrefix(e.Name(), "a (") {
				// A complete upload of the seed's a.txt is legitimate;
				// anything else would have to come from a name check
				// that let a fuzzed name through.
				// (Safe here: what only Windows refuses is kept as it is
				// elsewhere, store.LocalName.)
				if err := store.ValidateHere(e.Name()); err != nil {
					t.Fatalf("%s landed: %v", e.Name(), err)
				}
			}
		}
	})
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// browserTimeCases are a page's lastmodified values, hostile ones too.
var browserTimeCases = []struct {
	in   string
	want time.Time
}{
	{"1436874612345", time.UnixMilli(1436874612345)},
	{"253402300799999", time.UnixMilli(253402300799999)}, // the last millisecond of 9999
	{"", time.Time{}},
	{"0", time.Time{}},
	{"-5", time.Time{}},
	{"253402300800000", time.Time{}}, // 10000
	{"9223372036854775807", time.Time{}},
	{"99999999999999999999", time.Time{}},
	{"1e12", time.Time{}},
	{" 1436874612345", time.Time{}},
	{"1436874612345.5", time.Time{}},
	{"0x10", time.Time{}},
	{"yesterday", time.Time{}},
}

func TestBrowserTime(t *testing.T) {
	for _, c := range browserTimeCases {
		if got := browserTime(c.in); !got.Equal(c.want) {
			t.Errorf("browserTime(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// A page's lastmodified gives no time, or one between 1970 and 9999.
func FuzzBrowserTime(f *testing.F) {
	for _, c := range browserTimeCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := browserTime(in)
		if !got.IsZero() && (got.Before(time.UnixMilli(1)) || got.Year() > 9999) {
			t.Fatalf("browserTime(%q) = %v", in, got)
		}
	})
}

// Where a browser's file goes is always a path ValidateHere takes, below
// the download folder, without a backslash, ending in the file's own name
// (as saved here); a name with a folder in it is never taken.
func FuzzUploadName(f *testing.F) {
	for _, c := range uploadNameCases {
		f.Add(c.filename, c.relpath)
	}
	f.Fuzz(func(t *testing.T, filename, relpath string) {
		got, err := uploadName(filename, relpath)
		if err != nil {
			return
		}
		if err := store.ValidateHere(got); err != nil {
			t.Fatalf("uploadName(%q, %q) = %q, which ValidateHere refuses: %v", filename, relpath, got, err)
		}
		if strings.Contains(got, `\`) {
			t.Fatalf("uploadName(%q, %q) = %q: a backslash kept", filename, relpath, got)
		}
		if path.Base(got) != browserName(filename) || strings.Contains(filename, "/") {
			t.Fatalf("uploadName(%q, %q) = %q: not the file's name last", filename, relpath, got)
		}
		if relpath == "" && got != browserName(filename) {
			t.Fatalf("uploadName(%q, \"\") = %q: folders without a folder path", filename, got)
		}
	})
}

// A page's batch metadata reads as a bounded Batch or none; its Top is one
// storable name, the first element of the file's path.
func FuzzBrowserBatch(f *testing.F) {
	for _, c := range batchCases {
		f.Add(c.meta["batch"], c.meta["batchfiles"], c.meta["batchbytes"], c.meta["batchfolders"], c.meta["batchtop"], c.name)
	}
	f.Fuzz(func(t *testing.T, id, files, bytes, folders, top, name string) {
		b := browserBatch(map[string]string{"batch": id, "batchfiles": files, "batchbytes": bytes, "batchfolders": folders, "batchtop": top}, name)
		if b == (Batch{}) {
			return
		}
		if len(b.ID) < 16 || len(b.ID) > 64 || b.Files < 1 || b.Files > maxBatchFiles || b.Bytes < 0 ||
			b.Folders < 0 || b.Folders > b.Files {
			t.Fatalf("browserBatch read %+v", b)
		}
		if b.Top != "" && (strings.Contains(b.Top, "/") || store.ValidateHere(b.Top) != nil || !strings.HasPrefix(name, b.Top+"/")) {
			t.Fatalf("browserBatch's Top %q for %q", b.Top, name)
		}
	})
}
