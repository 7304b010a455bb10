package weblink

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ferrydrop/ferry/engine/store"
)

// secret is a file beside the shared one: nothing may ever serve it.
const secret = "SECRET-not-shared"

// hostileShare shares one file of a folder that also holds a secret, and
// plants a symlink to the secret inside a shared folder.
func hostileShare(t *testing.T, s *Server) *Link {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shared", "ok.txt"), []byte("ok"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(dir, "shared", "ln.txt")); err != nil {
		t.Fatal(err)
	}
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "shared")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestHostilePaths(t *testing.T) {
	s := startServer(t, Options{})
	l := hostileShare(t, s)
	tok := strings.TrimSuffix(strings.TrimPrefix(l.Path(), "/l/"), "/")
	for _, c := range []struct {
		path string
		code int
	}{
		{"/", 404},
		{"/l/", 404},
		{"/l/" + tok + "/f/0/ok.txt", 200},
		{"/l/" + strings.ToUpper(tok) + "/", 404},
		{"/l/" + tok[:len(tok)-1] + "/", 404},
		{"/l/" + tok + "a/", 404},
		{"/l/" + tok[:len(tok)-1] + "1/", 404}, // outside the alphabet
		{"/l/../l/" + tok + "/", 404},          // only the canonical path names a link
		{"/l/" + tok + "/f/0/../../secret.txt", 404},
		{"/l/" + tok + "/f/0/ln.txt", 404},
		{"/l/" + tok + "/f/1/ln.txt", 404},
		{"/l/" + tok + "/f/-1/ok.txt", 404},
		{"/l/" + tok + "/f/00/ok.txt", 404},
		{"/l/" + tok + "/f/+0/ok.txt", 404},
		{"/l/" + tok + "/f/99999999999999999999/ok.txt", 404},
		{"/l/" + tok + "/f/0/", 404},
		{"/l/" + tok + "/f/0", 404},
		{"/l/" + tok + "/f/0/ok.txt/", 404},
		{"/l/" + tok + "/f/0/OK.TXT", 404},
		{"/l/" + tok + "/f/0%2F..%2F..%2Fsecret.txt", 404},
		{"/l/" + tok + "/t/0/x", 404},
		{"/l/" + tok + "/t/0", 404}, // not a picture
		{"/l/" + tok + "/tus/", 404},
		{"/l/" + tok + "/%00", 404},
		{"/a/page.html", 404},
		{"/a/../assets/page.html", 404},
		{"/a/style.css", 200},
		{"/a/tus-js-client.LICENSE", 200},
		{"/a/", 404},
		{"/l/" + tok + "/all.zip", 200},
		{"/l/" + tok + "/?page=1", 200},
		{"/l/" + tok + "/?page=2", 404}, // one page only
		{"/l/" + tok + "/?page=0", 404},
		{"/l/" + tok + "/?page=-1", 404},
		{"/l/" + tok + "/?page=01", 404},
		{"/l/" + tok + "/?page=1&page=1", 404},
		{"/l/" + tok + "/?page=%", 404},
		{"/l/" + tok + "/?page=99999999999999999999", 404},
		{"/l/" + tok + "/?page=../secret.txt", 404},
		{"/l/" + tok + "/?x=<script>", 200}, // ignored
		{"/l/" + tok + "/?q=%3Cscript%3E", 200},
		{"/l/" + tok + "/?q=ok&page=2", 404}, // one page of results
		{"/l/" + tok + "/?q=a&q=b", 200},     // every file, saying why
		{"/l/" + tok + "/?q=" + strings.Repeat("a", 300), 200},
		{"/l/" + tok + "/?q=ln.txt", 200}, // a symlink left out is not found
		{"/l/" + tok + "/?folders=1", 200},
		{"/l/" + tok + "/?folders=1&page=2", 404},
		{"/l/" + tok + "/?folders=../..", 200}, // not the folder list: ignored
		{"/l/" + tok + "/f/0/ok.txt?page=9", 200},
	} {
		t.Run(c.path, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Raw, so that nothing cleans the path on the way.
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", c.path)
			b, _ := io.ReadAll(conn)
			var code int
			fmt.Sscanf(string(b), "HTTP/1.1 %d", &code)
			if code == http.StatusFound {
				code = 200 // a cleaned path is redirected to its canonical form
			}
			if code != c.code {
				t.Errorf("%d, want %d:\n%.300s", code, c.code, b)
			}
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("the secret was served")
			}
			if !bytes.Contains(b, []byte("X-Content-Type-Options: nosniff")) {
				t.Errorf("no nosniff")
			}
		})
	}
}

func TestHostileUploads(t *testing.T) {
	s, l, in, tc := startReceive(t, ReceiveOptions{MaxFileSize: 1 << 30})
	md := func(name string) string { return "filename " + base64.StdEncoding.EncodeToString([]byte(name)) }
	type req struct {
		method string
		loc    bool // to the upload made for the case, else the endpoint
		hdr    map[string]string
		body   io.Reader
		length int64 // -1: no Content-Length (chunked)
	}
	tus := func(m map[string]string) map[string]string {
		m["Tus-Resumable"] = "1.0.0"
		return m
	}
	patch := func(off string) map[string]string {
		return tus(map[string]string{"Upload-Offset": off, "Content-Type": "application/offset+octet-stream"})
	}
	for _, c := range []struct {
		name string
		req  req
		code int
	}{
		{"name with ..", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("../x")})}, 422},
		{"name with a folder", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("a/b")})}, 422},
		{"folder path with ..", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("x") + ",relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/../../x"))})}, 422},
		{"folder path of another name", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("x") + ",relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/y"))})}, 422},
		{"folder path", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("x") + ",relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/day 1/x"))})}, 201},
		// An empty folder (the "folder" metadata): its path is checked as
		// a file's is, and it has no bytes.
		{"folder with bytes", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("e") + ",folder MQ==,relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/e"))})}, 400},
		{"folder path with ..", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "0", "Upload-Metadata": md("e") + ",folder MQ==,relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/../../e"))})}, 422},
		{"folder named ..", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "0", "Upload-Metadata": md("..") + ",folder MQ==,relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/.."))})}, 422},
		{"absolute folder", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "0", "Upload-Metadata": md("etc") + ",folder MQ==,relativepath " + base64.StdEncoding.EncodeToString([]byte("/../etc"))})}, 422},
		{"folder path of another name", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "0", "Upload-Metadata": md("e") + ",folder MQ==,relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/f"))})}, 422},
		{"folder with a control character", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "0", "Upload-Metadata": md("e\x1b") + ",folder MQ==,relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/e\x1b"))})}, 422},
		{"folder with a bidi override", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "0", "Upload-Metadata": md("a\u202etxt.exe") + ",folder MQ==,relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/a\u202etxt.exe"))})}, 422},
		{"folder with a folder in its name", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "0", "Upload-Metadata": md("a/b") + ",folder MQ==,relativepath " + base64.StdEncoding.EncodeToString([]byte("Trip/a/b"))})}, 422},
		{"absolute name", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("/etc/passwd")})}, 422},
		{"device name", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("CON.txt")})}, map[bool]int{true: 422, false: 201}[runtime.GOOS == "windows"]}, // only Windows keeps it out
		{"control character", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("x\x1b")})}, 422},
		{"named like a partial", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("x.partial")})}, 201},
		{"control character", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("a\nb")})}, 422},
		{"bidi override", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md("a\u202etxt.exe")})}, 422},
		{"long name", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md(strings.Repeat("a", 300))})}, 201}, // cut to fit
		{"long name with a control character", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": md(strings.Repeat("a", 300) + "\x1b")})}, 422},
		{"no name", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1"})}, 422},
		{"bad metadata", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1", "Upload-Metadata": "filename !!!"})}, 422},
		{"negative length", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "-1", "Upload-Metadata": md("a")})}, 400},
		{"deferred length", req{method: "POST", hdr: tus(map[string]string{"Upload-Defer-Length": "1", "Upload-Metadata": md("a")})}, 501},
		{"over the size bound", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "1099511627776", "Upload-Metadata": md("a")})}, 413},
		{"creation with a body", req{method: "POST", hdr: tus(map[string]string{"Upload-Length": "5", "Upload-Metadata": md("a"), "Content-Type": "application/offset+octet-stream"}), body: strings.NewReader("hello"), length: 5}, 413},
		{"concatenation", req{method: "POST", hdr: tus(map[string]string{"Upload-Concat": "partial", "Upload-Length": "1", "Upload-Metadata": md("a")})}, 201},
		{"no tus version", req{method: "POST", hdr: map[string]string{"Upload-Length": "1", "Upload-Metadata": md("a")}}, 412},
		{"wrong offset", req{method: "PATCH", loc: true, hdr: patch("5"), body: strings.NewReader("x"), length: 1}, 409},
		{"negative offset", req{method: "PATCH", loc: true, hdr: patch("-1"), body: strings.NewReader("x"), length: 1}, 400},
		{"offset not a number", req{method: "PATCH", loc: true, hdr: patch("0x0"), body: strings.NewReader("x"), length: 1}, 400},
		{"body past the length", req{method: "PATCH", loc: true, hdr: patch("0"), body: strings.NewReader(strings.Repeat("x", 200)), length: 200}, 413},
		{"chunk over ChunkSize", req{method: "PATCH", loc: true, hdr: patch("0"), body: io.LimitReader(zeros{}, ChunkSize+1), length: ChunkSize + 1}, 413},
		{"endless chunked body", req{method: "PATCH", loc: true, hdr: patch("0"), body: zeros{}, length: -1}, 411},
		{"length changed later", req{method: "PATCH", loc: true, hdr: map[string]string{"Tus-Resumable": "1.0.0", "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream", "Upload-Length": "5"}, body: strings.NewReader("x"), length: 1}, 501},
		{"wrong content type", req{method: "PATCH", loc: true, hdr: tus(map[string]string{"Upload-Offset": "0", "Content-Type": "text/plain"}), body: strings.NewReader("x"), length: 1}, 400},
		{"unknown upload", req{method: "HEAD", hdr: tus(map[string]string{})}, 404},
		{"GET of an upload", req{method: "GET", loc: true, hdr: tus(map[string]string{})}, 405},
		{"PUT", req{method: "PUT", loc: true, hdr: tus(map[string]string{})}, 405},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := tc.base
			if c.req.loc {
				loc, res := tc.create("case.bin", 100)
				if res.StatusCode != http.StatusCreated {
					t.Fatalf("create: %d", res.StatusCode)
				}
				u = loc
			} else if c.req.method == "HEAD" {
				u += "0123456789abcdef0123456789abcdef"
			}
			req, _ := http.NewRequest(c.req.method, u, c.req.body)
			for k, v := range c.req.hdr {
				req.Header.Set(k, v)
			}
			req.ContentLength = c.req.length
			if c.req.body == nil {
				req.ContentLength = 0
			}
			res, err := tc.c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != c.code {
				t.Errorf("%d, want %d", res.StatusCode, c.code)
			}
		})
	}
	// Nothing landed outside the folder, nothing but partials of the cases
	// (in the folders of a folder's file) and no final file.
	filepath.WalkDir(in.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(d.Name(), ".partial") {
			t.Errorf("left in the folder: %s", p)
		}
		return nil
	})
	l.Stop()
	if ents, _ := os.ReadDir(in.Dir()); len(ents) != 0 {
		t.Errorf("after Stop: %v", ents)
	}
	_ = s
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

func TestHostileIdleConnections(t *testing.T) {
	s := startServer(t, Options{MaxConnsPerAddr: 16, MaxConns: 64})
	dir := t.TempDir()
	writeFile(t, dir, "a", 10)
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 1000 {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			break // the backlog is full: the flood is bounded by the kernel too
		}
		conns = append(conns, c)
	}
	// Every connection is either held (16) or closed by the server: a read
	// on the closed ones ends at once. Count the held ones through a
	// request from another address (127.0.0.2 is loopback too).
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	res, err := c.Get(base(s) + l.Path() + "f/0/a")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("another device: %d", res.StatusCode)
	}
	from1 := netip.MustParseAddr("127.0.0.1")
	total, byOne := s.ln.open(from1)
	if byOne > 16 || total > 64 {
		t.Errorf("held %d connections from the flooding address, %d in all", byOne, total)
	}
}

// TestHostileManyFolders: a page that sends empty folders, or files deep
// in folders, without end makes MaxFolders folders, no more: each folder
// created counts, whether for an empty folder (an upload of no bytes with
// the "folder" metadata, made when it finishes) or above a file, and an
// upload that could create more than are left is refused. Before, the
// bound counted the empty folders' uploads, each up to 64 levels deep: one
// upload of a folder 64 deep made 64 folders under a bound of 10, and the
// files' folders were not counted at all.
func TestHostileManyFolders(t *testing.T) {
	_, _, in, tc := startReceive(t, ReceiveOptions{MaxFolders: 10})
	send := func(p string, folder bool) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, tc.base, nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Length", "0")
		meta := "filename " + base64.StdEncoding.EncodeToString([]byte(path.Base(p))) +
			",relativepath " + base64.StdEncoding.EncodeToString([]byte(p))
		if folder {
			meta += ",folder MQ=="
		}
		req.Header.Set("Upload-Metadata", meta)
		res, err := tc.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	deep := strings.Repeat("d/", store.MaxDepth-1) + "d"
	for _, c := range []struct {
		path   string
		folder bool
		status int
	}{
		{deep, true, http.StatusForbidden},                                   // 64 folders
		{strings.TrimSuffix(deep, "/d") + "/f", false, http.StatusForbidden}, // a file below 63
		{"Trip/d0/e", true, http.StatusCreated},                              // 3 made: 3
		{"Trip/d1/e", true, http.StatusCreated},                              // Trip was there: 5
		{"Trip/d1/e", true, http.StatusCreated},                              // all there: 5
		{"Trip/d2/f.bin", false, http.StatusCreated},                         // d2: 6
		{"Trip/d3/e", true, http.StatusCreated},                              // 8
		{"Trip/d4/e", true, http.StatusForbidden},                            // could make 3, 2 are left
		{"Trip/d4/f.bin", false, http.StatusCreated},                         // 9
		{"x/y", true, http.StatusForbidden},
		{"x", true, http.StatusCreated}, // 10
		{"Trip/d5/e", true, http.StatusForbidden},
		{"Trip/d5/f.bin", false, http.StatusForbidden},
		{"top.bin", false, http.StatusCreated}, // makes none
	} {
		if got := send(c.path, c.folder); got != c.status {
			t.Errorf("%.40s (folder %v): %d, want %d", c.path, c.folder, got, c.status)
		}
	}
	var dirs int
	filepath.WalkDir(in.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != in.Dir() {
			dirs++
		}
		return nil
	})
	if dirs != 10 {
		t.Errorf("%d folders made, want 10 (MaxFolders)", dirs)
	}
	for _, p := range []string{"Trip/d0/e", "Trip/d1/e", "Trip/d3/e", "x"} {
		if st, err := os.Stat(filepath.Join(in.Dir(), filepath.FromSlash(p))); err != nil || !st.IsDir() {
			t.Errorf("%s: %v, want a folder", p, err)
		}
	}
}

func TestHostileManyUploads(t *testing.T) {
	_, l, in, tc := startReceive(t, ReceiveOptions{MaxOpen: 64})
	tc.c = &http.Client{Transport: &http.Transport{MaxConnsPerHost: 8}}
	var created, refused, other atomic.Int64
	var wg sync.WaitGroup
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, res := tc.create(fmt.Sprintf("f%d.bin", i), 10)
			switch res.StatusCode {
			case http.StatusCreated:
				created.Add(1)
			case http.StatusTooManyRequests:
				refused.Add(1)
			default:
				other.Add(1)
			}
		}()
	}
	wg.Wait()
	if created.Load() != 64 || refused.Load() != 1000-64 || other.Load() != 0 {
		t.Fatalf("created %d, refused %d, other %d", created.Load(), refused.Load(), other.Load())
	}
	l.Stop()
	if ents, _ := os.ReadDir(in.Dir()); len(ents) != 0 {
		t.Errorf("after Stop: %d files left", len(ents))
	}
}

func TestHostilePINForm(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a", 10)
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a")}, ShareOptions{LinkOptions: LinkOptions{PIN: "1234"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		body io.Reader
		code int
	}{
		{"oversized form", strings.NewReader("pin=" + strings.Repeat("1", maxFormBytes)), http.StatusBadRequest},
		{"endless form", zeros{}, http.StatusBadRequest},
		{"over-long PIN", strings.NewReader("pin=" + strings.Repeat("1", maxPINBytes+1)), http.StatusForbidden},
		{"PIN with a NUL", strings.NewReader("pin=1234%00"), http.StatusForbidden},
		{"right PIN", strings.NewReader("pin=1234"), http.StatusSeeOther},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, base(s)+l.Path()+"pin", c.body)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			res, err := (&http.Transport{}).RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != c.code {
				t.Errorf("%d, want %d", res.StatusCode, c.code)
			}
		})
	}
}

// uploadNameCases are a browser's file names and folder paths (filename,
// relativepath) and where the file goes, "" for refused; they double as
// FuzzUploadName's corpus.
var uploadNameCases = []struct{ filename, relpath, want string }{
	{"IMG_1.jpg", "", "IMG_1.jpg"},
	{"IMG_1.jpg", "Trip/day 1/IMG_1.jpg", "Trip/day 1/IMG_1.jpg"},
	{"IMG_1.jpg", "/Trip/IMG_1.jpg", "Trip/IMG_1.jpg"}, // a dropped entry's fullPath
	{"IMG_1.jpg", "IMG_1.jpg", "IMG_1.jpg"},
	{"a.txt", "Trip/../../etc/a.txt", ""},
	{"a.txt", "../a.txt", ""},
	{"a.txt", "//server/share/a.txt", ""},
	{"a.txt", "Trip//a.txt", ""},
	{"a.txt", "Trip/./a.txt", ""},
	{"a.txt", "Trip/b.txt", ""},
	{"a.txt", "Trip/a.txt/", ""},
	{"a.txt", `Trip\a.txt`, ""}, // "Trip_a.txt": not the file's name
	{`a\b.txt`, "", "a_b.txt"},  // legal on Linux and macOS
	{`..\..\x.sh`, "", ".._.._x.sh"},
	{`a\b.txt`, `Trip\2024/a\b.txt`, "Trip_2024/a_b.txt"},
	{`a\b.txt`, "Trip/a_b.txt", "Trip/a_b.txt"},
	{"a.txt", `..\a.txt`, ""},
	{`a\b.txt`, "../a\b.txt", ""},
	{"a.txt", "Trip\u202e/a.txt", ""},
	{"a.txt", "Trip\n/a.txt", ""},
	{"a.txt", "Trip.partial/a.txt", "Trip.partial/a.txt"},
	{"a.txt", strings.Repeat("d/", 2100) + "a.txt", ""},
	{strings.Repeat("日", 100) + ".pdf", "", strings.Repeat("日", 83) + ".pdf"}, // a name Linux cannot hold, cut to fit
	{strings.Repeat("日", 100) + ".pdf", strings.Repeat("é", 150) + "/" + strings.Repeat("日", 100) + ".pdf", strings.Repeat("é", 127) + "/" + strings.Repeat("日", 83) + ".pdf"},
	{strings.Repeat("a", 300) + "\u202e.txt", "", ""},
	{"a.txt", "/", ""},
	{"a/b", "", ""},
	{"a/b", "a/b", ""},
	{"", "Trip/", ""},
}

func TestUploadName(t *testing.T) {
	for _, c := range uploadNameCases {
		got, err := uploadName(c.filename, c.relpath)
		if c.want == "" {
			if err == nil {
				t.Errorf("uploadName(%q, %q) = %q, want it refused", c.filename, c.relpath, got)
			} else if !errors.Is(err, store.ErrBadName) && !errors.Is(err, store.ErrNameTooLong) {
				t.Errorf("uploadName(%q, %q): %v, want a name error", c.filename, c.relpath, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("uploadName(%q, %q) = %q, %v; want %q", c.filename, c.relpath, got, err, c.want)
		}
	}
}

// batchCases are a page's batch metadata for a file at name and what the
// receiver reads from it; they double as FuzzBrowserBatch's corpus.
var batchCases = []struct {
	meta map[string]string
	name string
	want Batch
}{
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000"}, "a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Bytes: 1000}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchtop": "Trip"}, "Trip/day 1/a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Bytes: 1000, Top: "Trip"}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchtop": "Other"}, "Trip/a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Bytes: 1000}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchtop": "Trip/day 1"}, "Trip/day 1/a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Bytes: 1000}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchtop": ".."}, "../a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Bytes: 1000}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchtop": "a.jpg"}, "a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Bytes: 1000}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchfolders": "1"}, "a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Folders: 1, Bytes: 1000}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchfolders": "3"}, "a", Batch{ID: "0123456789abcdef", Files: 3, Folders: 3, Bytes: 1000}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchfolders": "4"}, "a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Bytes: 1000}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchfolders": "-1"}, "a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Bytes: 1000}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "1000", "batchfolders": "x"}, "a.jpg", Batch{ID: "0123456789abcdef", Files: 3, Bytes: 1000}},
	{map[string]string{"batchfolders": "1"}, "a.jpg", Batch{}},
	{map[string]string{}, "a.jpg", Batch{}},
	{map[string]string{"batch": "short", "batchfiles": "3", "batchbytes": "1000"}, "a.jpg", Batch{}},
	{map[string]string{"batch": "0123456789ABCDEF", "batchfiles": "3", "batchbytes": "1000"}, "a.jpg", Batch{}},
	{map[string]string{"batch": strings.Repeat("a", 65), "batchfiles": "3", "batchbytes": "1000"}, "a.jpg", Batch{}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "0", "batchbytes": "1000"}, "a.jpg", Batch{}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "1000001", "batchbytes": "1000"}, "a.jpg", Batch{}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "-1", "batchbytes": "1000"}, "a.jpg", Batch{}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "-5"}, "a.jpg", Batch{}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": "3", "batchbytes": "99999999999999999999"}, "a.jpg", Batch{}},
	{map[string]string{"batch": "0123456789abcdef", "batchfiles": " 3", "batchbytes": "1000"}, "a.jpg", Batch{}},
}

func TestBrowserBatch(t *testing.T) {
	for _, c := range batchCases {
		if got := browserBatch(c.meta, c.name); got != c.want {
			t.Errorf("browserBatch(%v, %q) = %+v, want %+v", c.meta, c.name, got, c.want)
		}
	}
}
