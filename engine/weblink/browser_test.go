package weblink

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/ferrydrop/ferry/engine/store"
	"github.com/ferrydrop/ferry/internal/safetext"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// These tests drive Debian's chromium headless through chromedp: real
// pages, real downloads, tus-js-client uploading through a real file input.

// newBrowser starts chromium for the test, with a fresh profile, or skips.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install chromium): the browser tests are skipped")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelA()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// wireListener counts the bytes read from every connection; it can cut
// every connection and refuse new ones for a while, and throttle reads so
// that an upload on loopback lasts long enough to be interrupted (a
// throttle, not a timing assertion: nothing checks how long anything took).
type wireListener struct {
	net.Listener
	read    atomic.Int64
	rate    atomic.Int64 // bytes per second, 0: as fast as it comes
	refused chan struct{}

	mu    sync.Mutex // guards the fields below
	conns map[*wireConn]bool
	cut   bool
	next  time.Time // the throttle's next free slot
}

func newWireListener(t *testing.T) *wireListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &wireListener{Listener: ln, conns: map[*wireConn]bool{}, refused: make(chan struct{}, 1024)}
}

func (l *wireListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.cut {
			l.mu.Unlock()
			c.Close()
			select {
			case l.refused <- struct{}{}:
			default:
			}
			continue
		}
		wc := &wireConn{Conn: c, l: l}
		l.conns[wc] = true
		l.mu.Unlock()
		return wc, nil
	}
}

// setCut cuts every connection and refuses new ones (on), or takes them
// again (off).
func (l *wireListener) setCut(on bool) {
	l.mu.Lock()
	l.cut = on
	var open []*wireConn
	if on {
		for c := range l.conns {
			open = append(open, c)
		}
	}
	l.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

type wireConn struct {
	net.Conn
	l *wireListener
}

func (c *wireConn) Read(b []byte) (int, error) {
	rate := c.l.rate.Load()
	if rate > 0 && len(b) > 64<<10 {
		b = b[:64<<10]
	}
	n, err := c.Conn.Read(b)
	c.l.read.Add(int64(n))
	if rate > 0 && n > 0 {
		c.l.mu.Lock()
		now := time.Now()
		start := c.l.next
		if start.Before(now) {
			start = now
		}
		c.l.next = start.Add(time.Duration(int64(n) * int64(time.Second) / rate))
		wait := c.l.next.Sub(now)
		c.l.mu.Unlock()
		time.Sleep(wait)
	}
	return n, err
}

func (c *wireConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// randomFile writes n pseudo-random bytes to dir/name and returns its path.
func randomFile(t *testing.T, dir, name string, n int64, seed uint64) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	src := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	if _, err := io.CopyN(f, src, n); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// samefile fails the test unless the files a and b hold the same bytes.
func sameFile(t *testing.T, a, b string) {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x, y) {
		t.Fatalf("%s (%d bytes) and %s (%d bytes) differ", a, len(x), b, len(y))
	}
}

// picture writes a small PNG.
func picture(t *testing.T, p string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 320, 200))
	for y := range 200 {
		for x := range 320 {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 160, 255})
		}
	}
	var buf bytes.Buffer
	png.Encode(&buf, img)
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// download clicks sel and waits for the browser's download to complete; it
// returns the downloaded file's path.
func download(t *testing.T, ctx context.Context, dir, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute) // a stuck browser fails instead of hanging
	defer cancel()
	progress := chromedp.Events(ctx, browser.DownloadProgress)
	if err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			yes := true
			_, err := chromedp.Call(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
				Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &yes,
			})
			return err
		}),
		chromedp.Click(chromedp.CSS(sel)),
	); err != nil {
		t.Fatal(err)
	}
	for ev, err := range progress {
		if err != nil {
			t.Fatalf("download of %s: %v", sel, err)
		}
		switch ev.State {
		case browser.DownloadProgressStateCompleted:
			return filepath.Join(dir, ev.GUID)
		case browser.DownloadProgressStateCanceled:
			t.Fatalf("download of %s cancelled", sel)
		}
	}
	t.Fatalf("download of %s: no end", sel)
	return ""
}

func TestBrowserShare(t *testing.T) {
	ctx := newBrowser(t)
	dir := t.TempDir()
	big := randomFile(t, dir, "big <b>bold.bin", 20<<20, 1)
	picture(t, filepath.Join(dir, "photo.png"))
	os.MkdirAll(filepath.Join(dir, "folder"), 0o755)
	small := randomFile(t, filepath.Join(dir, "folder"), "grüße.txt", 1000, 2)
	s := startServer(t, Options{DeviceName: "Alice's laptop"})
	os.WriteFile(filepath.Join(dir, "broken.jpg"), []byte("not a picture"), 0o644)
	l, err := s.Share(context.Background(), []string{big, filepath.Join(dir, "photo.png"), filepath.Join(dir, "folder"), filepath.Join(dir, "broken.jpg")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base(s)+l.Path())); err != nil {
		t.Fatal(err)
	}
	// No markup from a name rendered: the <b> is text.
	bolds, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("b").length`))
	if err != nil || bolds != 0 {
		t.Fatalf("a name's markup rendered (%d <b> elements): %v", bolds, err)
	}
	// The picture's thumbnail loaded; a picture without one shows a
	// picture sign, not the browser's broken image.
	w, err := chromedp.Run(ctx, chromedp.Poll[int](`(() => { const i = document.querySelector("img"); return i && i.complete && i.naturalWidth })()`))
	if err != nil || w != thumbSide {
		t.Fatalf("thumbnail width %d: %v", w, err)
	}
	w, err = chromedp.Run(ctx, chromedp.Poll[int](`(() => { const i = document.querySelectorAll("img")[1]; return i && i.complete && (i.naturalWidth || -1) })()`))
	if err != nil || w != 96 {
		t.Fatalf("the picture without a thumbnail: width %d (-1: the broken image): %v", w, err)
	}
	got := download(t, ctx, t.TempDir(), `a[href^="f/0/"]`)
	sameFile(t, big, got)
	got = download(t, ctx, t.TempDir(), `a[href^="f/2/"]`)
	sameFile(t, small, got)

	z := download(t, ctx, t.TempDir(), `a[href="all.zip"]`)
	zr, err := zip.OpenReader(z)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	want := map[string]string{"big <b>bold.bin": big, "photo.png": filepath.Join(dir, "photo.png"), "folder/grüße.txt": small, "broken.jpg": filepath.Join(dir, "broken.jpg")}
	for _, f := range zr.File {
		p, ok := want[f.Name]
		if !ok {
			t.Fatalf("zip entry %q", f.Name)
		}
		delete(want, f.Name)
		rc, _ := f.Open()
		b, err := io.ReadAll(rc)
		rc.Close()
		orig, _ := os.ReadFile(p)
		if err != nil || !bytes.Equal(b, orig) {
			t.Fatalf("zip entry %q differs: %v", f.Name, err)
		}
	}
	if len(want) != 0 {
		t.Fatalf("zip lacks %v", want)
	}
}

// tinyPNG is a 2x2 PNG: a thumbnail is made of it quickly.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A share of more files than a page lists is listed in pages: each page
// has at most pageRows rows and thumbnails, and a file beyond the first
// 1000 is downloaded by itself after clicking through to its page. Before,
// the page listed the first 1000 and said "and 205 more files, in the
// zip": the others could only be had in the zip.
func TestBrowserShareOfManyFilesInPages(t *testing.T) {
	ctx := newBrowser(t)
	dir := filepath.Join(t.TempDir(), "Photos")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 1205
	img := tinyPNG(t)
	for i := range n {
		// The same picture, told apart by its name after its end (a
		// decoder stops at IEND).
		name := fmt.Sprintf("IMG_%04d.png", i)
		if err := os.WriteFile(filepath.Join(dir, name), append(slices.Clone(img), name...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, Options{DeviceName: "Alice's laptop"})
	l, err := s.Share(context.Background(), []string{dir}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// onPage waits for page p and checks what it lists.
	onPage := func(p, first, last int) {
		t.Helper()
		want := fmt.Sprintf("%q", strconv.Itoa(p))
		if p == 1 {
			want = "null"
		}
		// Polled here, not with chromedp.Poll: a poll in the page that
		// is being left fails with it.
		for deadline := time.Now().Add(time.Minute); ; {
			at, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === "complete" && new URLSearchParams(location.search).get("page") === `+want))
			if err == nil && at {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("page %d not reached: %v", p, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".files li:not(.folder) a")].map(a => a.textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != last-first+1 || rows[0] != fmt.Sprintf("IMG_%04d.png", first-1) || rows[len(rows)-1] != fmt.Sprintf("IMG_%04d.png", last-1) {
			t.Fatalf("page %d lists %d rows (%q ... %q), want files %d to %d", p, len(rows), rows[0], rows[len(rows)-1], first, last)
		}
		// Each page says which folder its first files are in.
		if h, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".files li.folder").textContent`)); h != "Photos" {
			t.Fatalf("page %d begins under %q", p, h)
		}
		imgs, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("img").length`))
		if imgs > pageRows {
			t.Fatalf("page %d has %d thumbnails", p, imgs)
		}
		said, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".pages .sub").textContent`))
		if want := fmt.Sprintf("Files %d to %d · page %d of 7", first, last, p); said != want {
			t.Fatalf("page %d says %q, want %q", p, said, want)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base(s)+l.Path())); err != nil {
		t.Fatal(err)
	}
	onPage(1, 1, 200)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`a[rel="next"]`))); err != nil {
		t.Fatal(err)
	}
	onPage(2, 201, 400)
	// Straight to a page by its number.
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`.pages input[name="page"]`), "6"),
		chromedp.Click(chromedp.CSS(`.pages button`)),
	); err != nil {
		t.Fatal(err)
	}
	onPage(6, 1001, 1200)
	got := download(t, ctx, t.TempDir(), `a[href^="f/1100/"]`)
	sameFile(t, filepath.Join(dir, "IMG_1100.png"), got)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`a[rel="last"]`))); err != nil {
		t.Fatal(err)
	}
	onPage(7, 1201, 1205)
	got = download(t, ctx, t.TempDir(), `a[href^="f/1204/"]`)
	sameFile(t, filepath.Join(dir, "IMG_1204.png"), got)
	// The zip still has them all.
	z := download(t, ctx, t.TempDir(), `a[href="all.zip"]`)
	zr, err := zip.OpenReader(z)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != n {
		t.Fatalf("the zip holds %d files, want %d", len(zr.File), n)
	}
}

// In a share of more files than a page lists, a file is found by typing
// part of its name (any letter case) into the page's search, and a folder
// from the list of folders, both with the page's scripts off: the page is
// forms and links. The search's results link each heading to the page of
// every file where its folder begins, at its heading; so does the folder
// list. Before, the only way to one file of 1,205 was paging through them.
func TestBrowserFindAFileInAShareOfManyFiles(t *testing.T) {
	ctx, cancel := context.WithTimeout(newBrowser(t), 3*time.Minute) // a field not there fails, not hangs
	defer cancel()
	s := startServer(t, Options{DeviceName: "Alice's laptop"})
	l, dir := shareOfFolders(t, s, 1205, 100, ShareOptions{}) // 13 folders, 7 pages
	if err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		}),
		chromedp.EmulateViewport(360, 740),
		chromedp.Navigate(base(s)+l.Path()),
	); err != nil {
		t.Fatal(err)
	}
	// at waits for a page whose address ends in suffix.
	at := func(suffix string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; {
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.readyState === "complete" && location.href.endsWith(`+strconv.Quote(suffix)+`)`))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				loc, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href`))
				t.Fatalf("not at ...%s but %s: %v", suffix, loc, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	rows := func() []string {
		t.Helper()
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".files li")].map(li => li.classList.contains("folder") ? "[" + li.textContent + "]" : li.querySelector("a").textContent)`))
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if on, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { let ran = false; const s = document.createElement("script"); s.textContent = "window.ran = true"; document.body.append(s); return !!window.ran })()`)); on {
		t.Fatal("the page's scripts run")
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#q`), "img_1100"),
		chromedp.Click(chromedp.CSS(`.find button`)),
	); err != nil {
		t.Fatal(err)
	}
	at("?q=img_1100")
	if got := rows(); !slices.Equal(got, []string{"[Photos/2019-12]", "IMG_1100.png"}) {
		t.Fatalf("the search lists %q", got)
	}
	if said, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".found").textContent`)); said != "1 file found for \u201cimg_1100\u201d" {
		t.Fatalf("the search says %q", said)
	}
	// On a phone, nothing wider than its screen.
	narrow := func(what string) {
		t.Helper()
		if wide, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > innerWidth`)); wide {
			t.Fatalf("%s is wider than the phone's screen", what)
		}
		if out := os.Getenv("FERRY_SCREENSHOTS"); out != "" {
			b, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
			if err == nil {
				os.WriteFile(filepath.Join(out, "share-"+what+".jpg"), b, 0o644)
			}
		}
	}
	narrow("search")
	got := download(t, ctx, t.TempDir(), `a[href^="f/1100/"]`)
	sameFile(t, filepath.Join(dir, "2019-12", "IMG_1100.png"), got)
	// The heading leads to the folder among every file, at its heading.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.files li.folder a`))); err != nil {
		t.Fatal(err)
	}
	at("?page=6#r1100")
	if got := rows(); got[0] != "[Photos/2019-11]" || !slices.Contains(got, "[Photos/2019-12]") || len(got) != 202 {
		t.Fatalf("page 6 lists %d rows from %q", len(got), got[0])
	}
	// The folder list, and a folder in it.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.views a[href="?folders=1"]`))); err != nil {
		t.Fatal(err)
	}
	at("?folders=1")
	narrow("folders")
	folders, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".folders li")].map(li => li.textContent)`))
	if err != nil || len(folders) != 13 || folders[0] != "Photos/2019-01100 files" || folders[12] != "Photos/2020-015 files" {
		t.Fatalf("the folder list: %q %v", folders, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.folders a[href="?page=7#r1200"]`))); err != nil {
		t.Fatal(err)
	}
	at("?page=7#r1200")
	if got := rows(); !slices.Equal(got, []string{"[Photos/2020-01]", "IMG_1200.png", "IMG_1201.png", "IMG_1202.png", "IMG_1203.png", "IMG_1204.png"}) {
		t.Fatalf("page 7 lists %q", got)
	}
	// Back to a search of a folder's name, and its second page.
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#q`), "PHOTOS/2019"),
		chromedp.Click(chromedp.CSS(`.find button`)),
	); err != nil {
		t.Fatal(err)
	}
	at("?q=PHOTOS%2F2019")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`a[rel="last"]`))); err != nil {
		t.Fatal(err)
	}
	at("?q=PHOTOS%2F2019&page=6")
	if got := rows(); len(got) != 2+200 || got[0] != "[Photos/2019-11]" || got[1] != "IMG_1000.png" || got[201] != "IMG_1199.png" {
		t.Fatalf("the last page of the search lists %d rows from %q", len(got), got[1])
	}
}

// A share of a folder tree names each folder once, above its files, and
// each row by its file's name: on a phone, a picture deep in a tree is one
// row as high as its thumbnail, its name in full. Before, each row was the
// whole path ("Trip/day 1/camera with a long name/raw/IMG_0001.png"),
// three lines of a 360-pixel screen, the same folders in every row and the
// file's name last. A file shared by itself after a folder is said to be
// in none.
func TestBrowserShareOfAFolderTreeOnAPhone(t *testing.T) {
	ctx := newBrowser(t)
	top := t.TempDir()
	root := filepath.Join(top, "Trip")
	img := tinyPNG(t)
	var want []string // the page's rows, headings in brackets
	for day := range 2 {
		rel := filepath.Join(fmt.Sprintf("day %d", day+1), "camera with a rather long folder name", "raw")
		if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
			t.Fatal(err)
		}
		want = append(want, "[Trip/"+filepath.ToSlash(rel)+"]")
		for i := range 3 {
			name := fmt.Sprintf("IMG_%d%03d.png", day+1, i)
			if err := os.WriteFile(filepath.Join(root, rel, name), img, 0o644); err != nil {
				t.Fatal(err)
			}
			want = append(want, name)
		}
	}
	// A folder's walk takes its entries by name: "notes.txt" after "day 2".
	writeFile(t, root, "notes.txt", 10)
	writeFile(t, top, "alone.txt", 10)
	want = append(want, "[Trip]", "notes.txt", "[Not in a folder]", "alone.txt")
	s := startServer(t, Options{DeviceName: "Alice's phone"})
	l, err := s.Share(context.Background(), []string{root, filepath.Join(top, "alone.txt")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(360, 740), chromedp.Navigate(base(s)+l.Path()),
		chromedp.Poll[chromedp.Void](`[...document.images].every(i => i.complete)`)); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".files li")].map(li => li.querySelector("a") ? li.querySelector("a").textContent : "[" + li.textContent + "]")`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("the page lists\n%q\nwant\n%q", rows, want)
	}
	// Every row of a file is one line: as high as its thumbnail and its
	// padding, its link one line of text.
	tall, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".files li")].filter(li => li.querySelector("a") && (li.getBoundingClientRect().height > 70 || li.querySelector("a").getClientRects().length > 1 || li.querySelector("a").getBoundingClientRect().height > 30)).map(li => li.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(tall) > 0 {
		t.Fatalf("rows taller than one line on a phone: %q", tall)
	}
	wide, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > innerWidth`))
	if wide {
		t.Fatal("the page is wider than the phone's screen")
	}
	// The file's own name is what its link downloads.
	got := download(t, ctx, t.TempDir(), `a[href$="/IMG_2001.png"]`)
	sameFile(t, filepath.Join(root, "day 2", "camera with a rather long folder name", "raw", "IMG_2001.png"), got)
}

// A share page shows a name that could disguise itself the way the app
// and ferry-cli do (safetext.Name): quoted, with its invisible and
// display-changing characters escaped. Before, "photo\u202egpj.exe" read
// "photoexe.jpg" (a right-to-left override turns what follows it around),
// " notes.txt" read "notes.txt" beside another "notes.txt", and a tab or a
// line break was a space. A name with markup in it is text, and runs
// nothing.
func TestBrowserShareShowsNamesAsTheyAre(t *testing.T) {
	ctx := newBrowser(t)
	dir := t.TempDir()
	odd := filepath.Join(dir, "odd\u200bfolder")
	if err := os.Mkdir(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"photo\u202egpj.exe", " notes.txt", "notes.txt", "tab\there.txt", "line\nbreak.txt", `"><img src=x onerror="document.title='ran'">.png`, "<svg onload=\"document.title='ran'\">.txt", "grüße.txt"}
	for i, n := range names {
		writeFile(t, odd, n, 10+i)
	}
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{odd}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base(s)+l.Path())); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".files li")].map(li => li.querySelector("a") ? li.querySelector("a").textContent : "[" + li.textContent + "]")`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"[" + safetext.Name("odd\u200bfolder") + "]"}
	sorted := slices.Clone(names)
	slices.Sort(sorted) // the walk's order
	for _, n := range sorted {
		want = append(want, safetext.Name(n))
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("the page lists\n%q\nwant\n%q", rows, want)
	}
	for _, r := range []string{`"photo\u202egpj.exe"`, `" notes.txt"`, "notes.txt", `"tab\there.txt"`} {
		if !slices.Contains(rows, r) {
			t.Errorf("no row reads %s", r)
		}
	}
	if title, _ := chromedp.Run(ctx, chromedp.Title()); title == "ran" {
		t.Fatal("a name's script ran")
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg, img:not([src^='t/'])").length`)); n != 0 {
		t.Fatalf("a name's markup rendered (%d elements)", n)
	}
	// Each downloads as itself.
	i := slices.Index(sorted, "photo\u202egpj.exe")
	got := download(t, ctx, t.TempDir(), fmt.Sprintf(`a[href^="f/%d/"]`, i))
	sameFile(t, filepath.Join(odd, "photo\u202egpj.exe"), got)
	i = slices.Index(sorted, " notes.txt")
	got = download(t, ctx, t.TempDir(), fmt.Sprintf(`a[href^="f/%d/"]`, i))
	sameFile(t, filepath.Join(odd, " notes.txt"), got)
}

func TestBrowserPIN(t *testing.T) {
	ctx := newBrowser(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", 10)
	s := startServer(t, Options{})
	l, err := s.Share(context.Background(), []string{filepath.Join(dir, "a.txt")}, ShareOptions{LinkOptions: LinkOptions{PIN: "2468"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base(s)+l.Path()),
		chromedp.SendKeys(chromedp.CSS("#pin"), "1357"),
		chromedp.Submit(chromedp.CSS("#pin")),
		chromedp.WaitVisible(chromedp.CSS("#pin-error")),
	); err != nil {
		t.Fatal(err)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".files li").length`)); n != 0 {
		t.Fatalf("wrong PIN shows %d files", n)
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#pin"), "2468"),
		chromedp.Submit(chromedp.CSS("#pin")),
		chromedp.WaitVisible(chromedp.CSS(".files li")),
	); err != nil {
		t.Fatal(err)
	}
	title, _ := chromedp.Run(ctx, chromedp.Title())
	if !strings.HasPrefix(title, "Files from") {
		t.Fatalf("title %q after the right PIN", title)
	}
}

// uploadTo opens a receive link's page and picks files in its input.
func uploadTo(t *testing.T, ctx context.Context, url string, files ...string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.SetUploadFiles(chromedp.CSS("#files"), files),
	); err != nil {
		t.Fatal(err)
	}
}

// waitStatus waits for the upload page's final sentence.
func waitStatus(t *testing.T, ctx context.Context) string {
	t.Helper()
	msg, err := chromedp.Run(ctx, chromedp.Poll[string](`document.getElementById("status").textContent`,
		chromedp.WithPollingTimeout(5*time.Minute)))
	if err != nil {
		t.Fatalf("no end in the page: %v", err)
	}
	return msg
}

// starts counts the uploads a link began.
func starts(l *Link) int {
	n := 0
	for _, a := range l.Activities() {
		if a.Upload {
			n++
		}
	}
	return n
}

// waitBytes waits until the link's upload has at least n bytes, from its
// events (which the test must be the only reader of).
func waitBytes(t *testing.T, l *Link, n int64) {
	t.Helper()
	for ev := range l.Events() {
		if ev.Activity != nil && ev.Activity.Bytes >= n {
			return
		}
		if ev.Kind == EventDone {
			t.Fatalf("the upload ended before %d bytes: %+v", n, ev.Activity)
		}
	}
	t.Fatalf("the link ended before %d bytes", n)
}

// drain reads a link's events to its end, in the background.
func drain(l *Link) {
	go func() {
		for range l.Events() {
		}
	}()
}

func startBrowserReceive(t *testing.T) (*Server, *Link, *FolderInbox, *wireListener) {
	t.Helper()
	wl := newWireListener(t)
	s := Serve(wl, Options{DeviceName: "Alice's laptop"})
	t.Cleanup(func() { s.Close() })
	in, err := NewFolderInbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	l, err := s.Receive(in, ReceiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, l, in, wl
}

func TestBrowserUpload(t *testing.T) {
	ctx := newBrowser(t)
	src := t.TempDir()
	files := []string{
		randomFile(t, src, "big.bin", 200<<20, 3),
		randomFile(t, src, "<img src=x onerror=alert(1)>.txt", 1234, 4),
		randomFile(t, src, "empty.txt", 0, 5),
	}
	// A photo keeps its date: the page sends File.lastModified (to the
	// millisecond), the receiver gives it to the file.
	taken := time.Date(2015, 7, 14, 11, 50, 12, 345_000_000, time.UTC)
	if err := os.Chtimes(files[1], taken, taken); err != nil {
		t.Fatal(err)
	}
	s, l, in, _ := startBrowserReceive(t)
	drain(l)
	uploadTo(t, ctx, base(s)+l.Path(), files...)
	if msg := waitStatus(t, ctx); msg != "3 files sent to Alice's laptop." {
		t.Fatalf("page says %q", msg)
	}
	for _, f := range files {
		sameFile(t, f, filepath.Join(in.Dir(), browserName(filepath.Base(f))))
	}
	if st, err := os.Stat(filepath.Join(in.Dir(), browserName(filepath.Base(files[1])))); err != nil {
		t.Error(err)
	} else if !st.ModTime().Equal(taken) {
		t.Errorf("received modified %v, want %v", st.ModTime(), taken)
	}
	if imgs, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("img").length`)); imgs != 0 {
		t.Fatalf("a name's markup rendered")
	}
}

func TestBrowserUploadResumesAfterCut(t *testing.T) {
	ctx := newBrowser(t)
	const size = 48 << 20
	file := randomFile(t, t.TempDir(), "cut.bin", size, 6)
	s, l, in, wl := startBrowserReceive(t)
	wl.rate.Store(24 << 20)
	uploadTo(t, ctx, base(s)+l.Path(), file)
	// Cut once two chunks are in: starting over would then send more than
	// one chunk twice.
	waitBytes(t, l, 2*ChunkSize+1)
	wl.setCut(true)
	<-wl.refused // the page tried again and was refused
	wl.setCut(false)
	wl.rate.Store(0)
	drain(l)
	if msg := waitStatus(t, ctx); msg != "1 file sent to Alice's laptop." {
		t.Fatalf("page says %q", msg)
	}
	sameFile(t, file, filepath.Join(in.Dir(), "cut.bin"))
	if n := starts(l); n != 1 {
		t.Fatalf("%d uploads began: the page started over", n)
	}
	// What came over the wire: the file, at most one chunk again, and the
	// requests' headers.
	if read := wl.read.Load(); read > size+ChunkSize+256<<10 {
		t.Fatalf("%d bytes read for a %d-byte file: more than one chunk sent twice", read, size)
	} else {
		t.Logf("%d bytes read for a %d-byte file (%d again)", read, size, read-size)
	}
}

func TestBrowserUploadContinuesAfterReload(t *testing.T) {
	ctx := newBrowser(t)
	const size = 48 << 20
	file := randomFile(t, t.TempDir(), "reload.bin", size, 7)
	s, l, in, wl := startBrowserReceive(t)
	wl.rate.Store(24 << 20)
	uploadTo(t, ctx, base(s)+l.Path(), file)
	waitBytes(t, l, 2*ChunkSize+1)
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wl.rate.Store(0)
	drain(l)
	// The user picks the same file again: it continues from the server's
	// offset, and the page says so.
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles(chromedp.CSS("#files"), []string{file})); err != nil {
		t.Fatal(err)
	}
	if msg := waitStatus(t, ctx); msg != "1 file sent to Alice's laptop." {
		t.Fatalf("page says %q", msg)
	}
	sameFile(t, file, filepath.Join(in.Dir(), "reload.bin"))
	if n := starts(l); n != 1 {
		t.Fatalf("%d uploads began: the reload started over", n)
	}
	if read := wl.read.Load(); read > size+ChunkSize+256<<10 {
		t.Fatalf("%d bytes read for a %d-byte file: more than one chunk sent twice", read, size)
	}
}

// A link stopped while its page sends: the file on the way and those
// waiting are not sent, the page says the link ended and offers no more
// picking (the files waiting are not each tried against an ended link).
func TestBrowserStoppedAndExpired(t *testing.T) {
	ctx := newBrowser(t)
	tmp := t.TempDir()
	file := randomFile(t, tmp, "stop.bin", 48<<20, 8)
	s, l, in, wl := startBrowserReceive(t)
	wl.rate.Store(16 << 20)
	uploadTo(t, ctx, base(s)+l.Path(), file, randomFile(t, tmp, "later1.txt", 10, 9), randomFile(t, tmp, "later2.txt", 10, 10))
	waitBytes(t, l, ChunkSize)
	l.Stop()
	wl.rate.Store(0)
	if ents, _ := os.ReadDir(in.Dir()); len(ents) != 0 {
		t.Fatalf("left behind after Stop: %v", ents)
	}
	msg := waitStatus(t, ctx)
	if msg != "0 files sent to Alice's laptop; 3 files were not sent. This link has ended: ask for a new one to send more." {
		t.Fatalf("page says %q after Stop", msg)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#list .state")).map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("files").disabled`))
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 3 || !disabled {
		t.Fatalf("rows %q, picker disabled %v", states, disabled)
	}
	for _, st := range states {
		if st != "not sent: this link was stopped on Alice's laptop" {
			t.Fatalf("rows %q", states)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base(s)+l.Path())); err != nil {
		t.Fatal(err)
	}
	if title, _ := chromedp.Run(ctx, chromedp.Title()); title != "Link ended" {
		t.Fatalf("stopped link shows %q", title)
	}
	// An expired share link.
	var shift atomic.Int64
	s2 := startServer(t, Options{Now: func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }})
	dir := t.TempDir()
	writeFile(t, dir, "a", 10)
	l2, err := s2.Share(context.Background(), []string{filepath.Join(dir, "a")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shift.Store(int64(2 * time.Hour))
	if err := chromedp.Do(ctx, chromedp.Navigate(base(s2)+l2.Path())); err != nil {
		t.Fatal(err)
	}
	body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("main")))
	if !strings.Contains(body, "This link expired.") {
		t.Fatalf("expired link shows %q", body)
	}
	if !errors.Is(l2.Err(), ErrExpired) {
		t.Fatalf("Err %v", l2.Err())
	}
}

// TestBrowserScreenshots takes both pages at 360x740 and 1280x800, light
// and dark. With FERRY_SCREENSHOTS=DIR it writes them there (the committed
// ones are docs/screenshots/weblink-*.png); otherwise into a temp dir.
func TestBrowserScreenshots(t *testing.T) {
	ctx := newBrowser(t)
	out := os.Getenv("FERRY_SCREENSHOTS")
	if out == "" {
		out = t.TempDir()
	}
	dir := t.TempDir()
	picture(t, filepath.Join(dir, "beach.png"))
	randomFile(t, dir, "Holiday video.mp4", 48_200_000, 9)
	randomFile(t, dir, "Notes for the trip.pdf", 812_000, 10)
	s := startServer(t, Options{DeviceName: "Alice's laptop"})
	sh, err := s.Share(context.Background(), []string{filepath.Join(dir, "beach.png"), filepath.Join(dir, "Holiday video.mp4"), filepath.Join(dir, "Notes for the trip.pdf")}, ShareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewFolderInbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	rl, err := s.Receive(in, ReceiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	drain(rl)
	src := t.TempDir()
	sent := []string{randomFile(t, src, "IMG_2041.jpg", 3_400_000, 11), randomFile(t, src, "IMG_2042.jpg", 2_900_000, 12)}
	for _, size := range [][2]int64{{360, 740}, {1280, 800}} {
		for _, scheme := range []string{"light", "dark"} {
			setup := chromedp.Steps(
				chromedp.EmulateViewport(size[0], size[1]),
				chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
					_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
						Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
					})
					return err
				}),
			)
			shot := func(name string) {
				b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
				if err != nil {
					t.Fatal(err)
				}
				if _, err := png.Decode(bytes.NewReader(b)); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := chromedp.Do(ctx, setup, chromedp.Navigate(base(s)+sh.Path()),
				chromedp.Poll[chromedp.Void](`document.querySelector("img").complete`)); err != nil {
				t.Fatal(err)
			}
			shot(fmt.Sprintf("weblink-share-%d-%s.png", size[0], scheme))
			if err := chromedp.Do(ctx, setup, chromedp.Navigate(base(s)+rl.Path()),
				chromedp.SetUploadFiles(chromedp.CSS("#files"), sent)); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, ctx)
			shot(fmt.Sprintf("weblink-upload-%d-%s.png", size[0], scheme))
		}
	}
}

// dropOn drops paths (files and folders) on the element sel of the page,
// as a file manager's drag does.
func dropOn(t *testing.T, ctx context.Context, sel string, paths ...string) {
	t.Helper()
	at, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector(`+strconv.Quote(sel)+`).getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()`))
	if err != nil {
		t.Fatal(err)
	}
	data := &input.DragData{Items: []*input.DragDataItem{}, Files: paths, DragOperationsMask: 1}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, typ := range []input.DispatchDragEventType{input.DispatchDragEventTypeDragEnter, input.DispatchDragEventTypeDragOver, input.DispatchDragEventTypeDrop} {
			if _, err := cdp.Call(ctx, tg, input.DispatchDragEvent, input.DispatchDragEventParams{Type: typ, X: at[0], Y: at[1], Data: data}); err != nil {
				return err
			}
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
}

// recordingInbox is a FolderInbox that keeps what Arrive was given.
type recordingInbox struct {
	*FolderInbox
	mu       sync.Mutex
	arrivals []Arrival
}

func (r *recordingInbox) Arrive(a Arrival) (*store.Dest, error) {
	r.mu.Lock()
	r.arrivals = append(r.arrivals, a)
	r.mu.Unlock()
	return r.FolderInbox.Arrive(a)
}

// seen is what Arrive was given so far.
func (r *recordingInbox) seen() []Arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.arrivals)
}

// startRecordingReceive is a receive link into a recordingInbox, served
// through a wireListener.
func startRecordingReceive(t *testing.T) (*Server, *Link, *recordingInbox, *wireListener) {
	t.Helper()
	wl := newWireListener(t)
	s := Serve(wl, Options{DeviceName: "Alice's laptop"})
	t.Cleanup(func() { s.Close() })
	folder, err := NewFolderInbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { folder.Close() })
	in := &recordingInbox{FolderInbox: folder}
	l, err := s.Receive(in, ReceiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s, l, in, wl
}

// TestBrowserUploadFolder: a folder dropped on the page arrives as its
// tree (its folders made on this device), beside a file dropped with it;
// two files of one name, size and date in two folders are two files (the
// page's fingerprint of an upload holds its path); the folders with no file
// below them are said not sent, each of them ("day 2/empty", and
// "onlyempty/sub/subsub" as 3: before, the page counted only the innermost
// of them, 2 where 4 did not arrive), and the page says so where it offers
// the folder picker. The same folder again merges into the folder it made,
// its files numbered, nothing overwritten.
func TestBrowserUploadFolder(t *testing.T) {
	ctx := newBrowser(t)
	src := t.TempDir()
	trip := filepath.Join(src, "Trip")
	for _, d := range []string{"day 1", "day 2/empty", "onlyempty/sub/subsub"} {
		if err := os.MkdirAll(filepath.Join(trip, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	same := time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)
	files := map[string]string{
		"Trip/a.jpg":           randomFile(t, trip, "a.jpg", 3<<20, 11),
		"Trip/day 1/a.jpg":     randomFile(t, filepath.Join(trip, "day 1"), "a.jpg", 3<<20, 12),
		"Trip/day 2/notes.txt": randomFile(t, filepath.Join(trip, "day 2"), "notes.txt", 100, 13),
		"alone.txt":            randomFile(t, src, "alone.txt", 10, 14),
	}
	for _, f := range []string{files["Trip/a.jpg"], files["Trip/day 1/a.jpg"]} {
		if err := os.Chtimes(f, same, same); err != nil {
			t.Fatal(err)
		}
	}
	s, l, in, _ := startRecordingReceive(t)
	drain(l)
	if err := chromedp.Do(ctx, chromedp.Navigate(base(s)+l.Path())); err != nil {
		t.Fatal(err)
	}
	note, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("folders-note").textContent`))
	if err != nil || note != "A folder dropped here arrives with its empty folders; a browser does not list the empty folders of a folder chosen with the button, so those are not sent." {
		t.Fatalf("the note by the folder picker: %q, %v", note, err)
	}
	dropOn(t, ctx, "#drop", trip, files["alone.txt"])
	// The deepest empty folders are sent (2), and arrive with the
	// folders above them: until 2026-12-06 none arrived, and the page
	// said "4 empty folders were not sent".
	if msg := waitStatus(t, ctx); msg != "4 files and 2 empty folders sent to Alice's laptop." {
		t.Fatalf("page says %q", msg)
	}
	for rel, from := range files {
		sameFile(t, from, filepath.Join(in.Dir(), filepath.FromSlash(rel)))
	}
	emptyDirs := []string{"Trip/day 2/empty", "Trip/onlyempty/sub/subsub"}
	for _, rel := range emptyDirs {
		if st, err := os.Stat(filepath.Join(in.Dir(), filepath.FromSlash(rel))); err != nil || !st.IsDir() {
			t.Errorf("the empty folder %s did not arrive: %v", rel, err)
		}
	}

	// Again: into the same folders, each file beside the one of its name.
	if err := chromedp.Do(ctx, chromedp.Navigate(base(s)+l.Path())); err != nil {
		t.Fatal(err)
	}
	dropOn(t, ctx, "#drop", trip)
	if msg := waitStatus(t, ctx); msg != "3 files and 2 empty folders sent to Alice's laptop." {
		t.Fatalf("the second time the page says %q", msg)
	}
	for _, rel := range []string{"Trip/a (1).jpg", "Trip/day 1/a (1).jpg", "Trip/day 2/notes (1).txt"} {
		if _, err := os.Stat(filepath.Join(in.Dir(), filepath.FromSlash(rel))); err != nil {
			t.Errorf("the second copy: %v", err)
		}
	}
	// Each drop was one set, as the page said it: its count, its size,
	// and its one folder when it was a folder alone.
	// An empty folder is one of its set's uploads (Arrival.Folder), so
	// the set completes with it.
	arrivals := in.seen()
	if len(arrivals) != 11 {
		t.Fatalf("%d uploads arrived, want 11 (7 files, 4 empty folders)", len(arrivals))
	}
	var folders []string
	for _, a := range arrivals {
		if a.Folder {
			folders = append(folders, a.Name)
		}
	}
	slices.Sort(folders)
	if want := append(slices.Clone(emptyDirs), emptyDirs...); !slices.Equal(folders, slices.Sorted(slices.Values(want))) {
		t.Errorf("the folders sent: %q, want %q twice", folders, emptyDirs)
	}
	var firstBytes int64
	for _, f := range files {
		st, _ := os.Stat(f)
		firstBytes += st.Size()
	}
	first, second := arrivals[0].Batch, arrivals[6].Batch
	if first.ID == "" || first.Files != 6 || first.Bytes != firstBytes || first.Top != "" {
		t.Errorf("the first drop's set: %+v (want 4 files and 2 folders, %d bytes, no one folder)", first, firstBytes)
	}
	if second.ID == "" || second.ID == first.ID || second.Files != 5 || second.Top != "Trip" {
		t.Errorf("the second drop's set: %+v (want another, 3 files and 2 folders, the folder Trip)", second)
	}
	for i, a := range arrivals {
		if want := map[bool]Batch{true: first, false: second}[i < 6]; a.Batch != want {
			t.Errorf("file %d (%s) says %+v, its set %+v", i, a.Name, a.Batch, want)
		}
	}

	var got []string
	filepath.WalkDir(in.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(in.Dir(), p)
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(got) != 7 {
		t.Errorf("received %q, want the 4 files and 3 second copies", got)
	}
}

// TestBrowserSetContinuesAfterReload: files picked together and cut short
// by a reload (a phone's browser reloads a tab it put away) continue as
// their set when the same files are picked again: the file sent before
// is not sent twice (it used to land again as "a (2).txt"), the one on the
// way resumes, the rest follow, and every upload carries the set's first
// ID, so the receiving device finishes the one transfer it began (with a
// new ID it waited for files that came under another).
func TestBrowserSetContinuesAfterReload(t *testing.T) {
	ctx := newBrowser(t)
	src := t.TempDir()
	files := []string{
		randomFile(t, src, "a.txt", 1000, 21),
		randomFile(t, src, "b.bin", 48<<20, 22),
		randomFile(t, src, "c.txt", 2000, 23),
	}
	s, l, in, wl := startRecordingReceive(t)
	folder := in.FolderInbox
	wl.rate.Store(24 << 20)
	uploadTo(t, ctx, base(s)+l.Path(), files...)
	for ev := range l.Events() { // a.txt sent, b.bin on its way
		if a := ev.Activity; a != nil && a.Name == "b.bin" && a.Bytes > 2*ChunkSize {
			break
		}
	}
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wl.rate.Store(0)
	drain(l)
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles(chromedp.CSS("#files"), files)); err != nil {
		t.Fatal(err)
	}
	if msg := waitStatus(t, ctx); msg != "3 files sent to Alice's laptop." {
		t.Fatalf("page says %q", msg)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#list .state")).map(e => e.textContent)`))
	if err != nil || len(states) != 3 || states[0] != "sent before · 1.0 KB" || !strings.HasPrefix(states[1], "sent · ") {
		t.Fatalf("the page's rows: %q %v", states, err)
	}
	// The set is over: the page keeps nothing of it.
	if kept, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Object.keys(localStorage).filter(k => k.startsWith("ferry-set|"))`)); err != nil || len(kept) != 0 {
		t.Fatalf("the page still keeps %q (%v)", kept, err)
	}
	got, err := os.ReadDir(folder.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d files arrived: %v", len(got), got)
	}
	for _, f := range files {
		sameFile(t, f, filepath.Join(folder.Dir(), filepath.Base(f)))
	}
	if n := starts(l); n != 3 {
		t.Fatalf("%d uploads began, want 3 (one per file)", n)
	}
	first := in.seen()
	for _, a := range first {
		if a.Batch.ID == "" || a.Batch.ID != first[0].Batch.ID || a.Batch.Files != 3 {
			t.Fatalf("the uploads' sets: %+v", first)
		}
	}

	// The set is over: the same files picked again are a new set, sent
	// again (numbered, never overwriting).
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.SetUploadFiles(chromedp.CSS("#files"), files[:1])); err != nil {
		t.Fatal(err)
	}
	if msg := waitStatus(t, ctx); msg != "1 file sent to Alice's laptop." {
		t.Fatalf("page says %q", msg)
	}
	if all := in.seen(); len(all) != 4 || all[3].Batch.ID == first[0].Batch.ID {
		t.Fatalf("the next set: %+v", all)
	}
	// A picker closed without a file begins no set, and keeps nothing.
	kept, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`document.getElementById("files").dispatchEvent(new Event("change")),
		Object.keys(localStorage).filter(k => k.startsWith("ferry-set|"))`))
	if err != nil || len(kept) != 0 {
		t.Fatalf("after an empty pick the page keeps %q (%v)", kept, err)
	}
}

// A file can be cancelled in the page: the one on its way is aborted and
// ended on the device (nothing of it stays), one waiting is not sent, and
// the others go.
func TestBrowserUploadCancel(t *testing.T) {
	ctx := newBrowser(t)
	src := t.TempDir()
	big := randomFile(t, src, "big.bin", 48<<20, 11)
	keep := randomFile(t, src, "keep.txt", 1000, 12)
	later := randomFile(t, src, "later.txt", 1000, 13)
	s, l, in, wl := startBrowserReceive(t)
	wl.rate.Store(8 << 20)
	uploadTo(t, ctx, base(s)+l.Path(), big, keep, later)
	waitBytes(t, l, ChunkSize/2)
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`button[aria-label="Cancel later.txt"]`)),
		chromedp.Click(chromedp.CSS(`button[aria-label="Cancel big.bin"]`)),
	); err != nil {
		t.Fatal(err)
	}
	wl.rate.Store(0)
	if msg := waitStatus(t, ctx); msg != "1 file sent to Alice's laptop; 2 files were not sent." {
		t.Fatalf("page says %q", msg)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#list .state")).map(e => e.textContent)`))
	if err != nil || len(states) != 3 || states[0] != "not sent: cancelled" || states[2] != "not sent: cancelled" {
		t.Fatalf("rows %q %v", states, err)
	}
	sameFile(t, keep, filepath.Join(in.Dir(), "keep.txt"))
	waitFor := time.Now().Add(10 * time.Second)
	for {
		ents, _ := os.ReadDir(in.Dir())
		if len(ents) == 1 {
			break
		}
		if time.Now().After(waitFor) {
			t.Fatalf("in the folder: %v (the cancelled upload's partial stays?)", ents)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := starts(l); n != 2 {
		t.Fatalf("%d uploads began, want big.bin's and keep.txt's", n)
	}
}

// TestBrowserUploadCancelledOnDevice: a file the receiving device cancels
// (Link.CancelUpload: the app's row, Engine.Cancel) is not sent again by
// the page as a new upload: while its chunk is on the way, and while the
// page waits to retry after a cut (its retry asks the upload's offset
// first). The page says who cancelled it, the files after it go on, and
// the same file picked again later is sent.
func TestBrowserUploadCancelledOnDevice(t *testing.T) {
	ctx := newBrowser(t)
	src := t.TempDir()
	first := randomFile(t, src, "first.bin", 48<<20, 21)
	second := randomFile(t, src, "second.bin", 48<<20, 22)
	later := randomFile(t, src, "later.txt", 1000, 23)
	s, l, in, wl := startRecordingReceive(t)
	wl.rate.Store(16 << 20)
	uploadTo(t, ctx, base(s)+l.Path(), first, second, later)
	// first.bin: cancelled here while a chunk of it is on the way.
	waitFileBytes(t, l, "first.bin", ChunkSize)
	if !l.CancelUpload(arrivalID(t, in, "first.bin")) {
		t.Fatal("CancelUpload: first.bin not open")
	}
	// second.bin: cancelled here while the page waits to try again.
	waitFileBytes(t, l, "second.bin", ChunkSize)
	wl.setCut(true)
	<-wl.refused // the page tried again and was refused
	if !l.CancelUpload(arrivalID(t, in, "second.bin")) {
		t.Fatal("CancelUpload: second.bin not open")
	}
	wl.setCut(false)
	wl.rate.Store(0)
	drain(l)
	if msg := waitStatus(t, ctx); msg != "1 file sent to Alice's laptop; 2 files were not sent." {
		t.Fatalf("page says %q", msg)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#list .state")).map(e => e.textContent)`))
	want := []string{"not sent: cancelled on Alice's laptop", "not sent: cancelled on Alice's laptop", "sent · 1.0 KB"}
	if err != nil || !slices.Equal(states, want) {
		t.Fatalf("rows %q, want %q (%v)", states, want, err)
	}
	if n := len(in.seen()); n != 3 {
		t.Fatalf("%d uploads began, want 3: a cancelled file was sent again", n)
	}
	if ents, _ := os.ReadDir(in.Dir()); len(ents) != 1 || ents[0].Name() != "later.txt" {
		t.Fatalf("in the folder: %v", ents)
	}
	// Picked again, the cancelled file is sent: the page does not resume
	// an upload the device ended.
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles(chromedp.CSS("#files"), []string{first})); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("status").textContent.startsWith("2 files sent")`,
		chromedp.WithPollingTimeout(5*time.Minute))); err != nil {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`))
		t.Fatalf("page says %q after the file was picked again (%v)", msg, err)
	}
	sameFile(t, first, filepath.Join(in.Dir(), "first.bin"))
}

// arrivalID is the ID of the last upload of name that began.
func arrivalID(t *testing.T, in *recordingInbox, name string) string {
	t.Helper()
	seen := in.seen()
	for i := len(seen) - 1; i >= 0; i-- {
		if seen[i].Name == name {
			return seen[i].ID
		}
	}
	t.Fatalf("no upload of %s began", name)
	return ""
}

// waitFileBytes waits until the link's upload of name has at least n
// bytes, from its events (which the test must be the only reader of).
func waitFileBytes(t *testing.T, l *Link, name string, n int64) {
	t.Helper()
	for ev := range l.Events() {
		if a := ev.Activity; a != nil && a.Name == name && a.Bytes >= n {
			return
		}
	}
	t.Fatalf("the link ended before %d bytes of %s", n, name)
}

// TestBrowserLinkUnknownAfterRestart: the device restarted while a page
// sent (Ferry quit and came back on the same port, with new links): the
// old link is unknown there now. The page says so once, in words, for the
// file on its way and those waiting, and offers no more picking; it said
// "the receiving device refused it (404)" for each.
func TestBrowserLinkUnknownAfterRestart(t *testing.T) {
	ctx := newBrowser(t)
	tmp := t.TempDir()
	s, l, _, wl := startBrowserReceive(t)
	wl.rate.Store(16 << 20)
	uploadTo(t, ctx, base(s)+l.Path(), randomFile(t, tmp, "big.bin", 48<<20, 31), randomFile(t, tmp, "later.txt", 10, 32))
	waitBytes(t, l, ChunkSize)
	addr := s.Addr().String()
	s.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s2 := Serve(ln, Options{DeviceName: "Alice's laptop"})
	t.Cleanup(func() { s2.Close() })
	in2, err := NewFolderInbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in2.Close() })
	if _, err := s2.Receive(in2, ReceiveOptions{}); err != nil {
		t.Fatal(err)
	}
	msg := waitStatus(t, ctx)
	if msg != "0 files sent to Alice's laptop; 2 files were not sent. This link has ended: ask for a new one to send more." {
		t.Fatalf("page says %q", msg)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#list .state")).map(e => e.textContent)`))
	const want = "not sent: Alice's laptop no longer has this link (Ferry was restarted there, or the link was stopped)"
	if err != nil || len(states) != 2 || states[0] != want || states[1] != want {
		t.Fatalf("rows %q (%v)", states, err)
	}
	if disabled, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("files").disabled`)); err != nil || !disabled {
		t.Fatalf("picker disabled %v (%v)", disabled, err)
	}
}

// TestBrowserUploadSavedAs: a file the device saved under another name
// than the page sent it with (numbered beside a file of that name there)
// is said so under its row, "saved as report (1).pdf", an empty file (whose
// upload ends with its POST) too; a name kept, or only composed (a Mac's
// decomposed accents, which look the same), says nothing more. A name's
// markup never renders. Before, every row said "sent" alone.
func TestBrowserUploadSavedAs(t *testing.T) {
	ctx := newBrowser(t)
	src := t.TempDir()
	decomposed := "Re\u0301sume\u0301.md"
	files := []string{
		randomFile(t, src, "report.pdf", 3000, 1),
		randomFile(t, src, "<b>x.txt", 100, 2),
		randomFile(t, src, "empty.txt", 0, 3),
		randomFile(t, src, "plain.txt", 10, 4),
		randomFile(t, src, decomposed, 10, 5),
	}
	s, l, in, _ := startBrowserReceive(t)
	for _, there := range []string{"report.pdf", "<b>x.txt", "empty.txt"} {
		if err := os.WriteFile(filepath.Join(in.Dir(), there), []byte("already here"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	drain(l)
	uploadTo(t, ctx, base(s)+l.Path(), files...)
	if msg := waitStatus(t, ctx); msg != "5 files sent to Alice's laptop." {
		t.Fatalf("page says %q", msg)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(Array.from(document.querySelectorAll("#list li")).map(li => [li.querySelector(".name").textContent, (li.querySelector(".saved") || {}).textContent || ""]))`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"report.pdf": "saved as report (1).pdf",
		"<b>x.txt":   "saved as <b>x (1).txt",
		"empty.txt":  "saved as empty (1).txt",
		"plain.txt":  "",
		decomposed:   "",
	}
	if !maps.Equal(rows, want) {
		t.Errorf("rows say %q, want %q", rows, want)
	}
	sameFile(t, files[0], filepath.Join(in.Dir(), "report (1).pdf"))
	if bolds, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("b").length`)); bolds != 0 {
		t.Fatalf("a name's markup rendered")
	}
}

// cuttingInbox is a FolderInbox that cuts every connection of its
// listener as the first file lands, before the answer to its last chunk
// is written.
type cuttingInbox struct {
	*FolderInbox
	wl   *wireListener
	once sync.Once
}

func (c *cuttingInbox) Landed(a Arrival, savedAs string, err error) {
	c.FolderInbox.Landed(a, savedAs, err)
	c.once.Do(func() { c.wl.setCut(true) })
}

// TestBrowserUploadAnswerLost: the answer to a file's last chunk is lost
// (the connection cut once the file was saved): the page, asking where the
// upload stands, is told it is whole, says it was sent and under which
// name, and sends nothing again. Before, the upload was gone (404) and
// tus-js-client sent the whole file again as a new upload: it landed
// twice, "again (1).bin" beside "again.bin".
func TestBrowserUploadAnswerLost(t *testing.T) {
	ctx := newBrowser(t)
	file := randomFile(t, t.TempDir(), "again.bin", 3<<20, 9)
	wl := newWireListener(t)
	s := Serve(wl, Options{DeviceName: "Alice's laptop"})
	t.Cleanup(func() { s.Close() })
	folder, err := NewFolderInbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { folder.Close() })
	if err := os.WriteFile(filepath.Join(folder.Dir(), "again.bin"), []byte("already here"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := s.Receive(&cuttingInbox{FolderInbox: folder, wl: wl}, ReceiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	drain(l)
	uploadTo(t, ctx, base(s)+l.Path(), file)
	<-wl.refused // the page tried again and was refused
	wl.setCut(false)
	if msg := waitStatus(t, ctx); msg != "1 file sent to Alice's laptop." {
		t.Fatalf("page says %q", msg)
	}
	saved, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("#list .saved") || {}).textContent || ""`))
	if err != nil {
		t.Fatal(err)
	}
	if saved != "saved as again (1).bin" {
		t.Errorf("the row says %q under the file", saved)
	}
	sameFile(t, file, filepath.Join(folder.Dir(), "again (1).bin"))
	names, err := os.ReadDir(folder.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 {
		t.Errorf("%d files in the folder, want 2: %v", len(names), names)
	}
	if n := starts(l); n != 1 {
		t.Errorf("%d uploads began: the page sent the file again", n)
	}
}

// TestBrowserTwoTabsOneFile: two tabs of one browser pick the same file,
// the second while the first sends it. The second continues the first's
// upload (tus-js-client finds it under the file's fingerprint, which the
// tabs share), taking it over; the first, interrupted, tries again and
// both say it was sent, as it was, once. Before, the first said "not sent:
// upload has been interrupted by another request for this upload
// resource" (tusd's 400, which the page took for a refusal) of a file that
// arrived.
func TestBrowserTwoTabsOneFile(t *testing.T) {
	ctx := newBrowser(t)
	file := randomFile(t, t.TempDir(), "same.bin", 40<<20, 11)
	s, l, in, wl := startBrowserReceive(t)
	wl.rate.Store(16 << 20)
	uploadTo(t, ctx, base(s)+l.Path(), file)
	waitBytes(t, l, ChunkSize)
	drain(l)
	second, cancel := chromedp.NewContext(ctx) // a tab of the same browser
	defer cancel()
	uploadTo(t, second, base(s)+l.Path(), file)
	for i, tab := range []context.Context{ctx, second} {
		if msg := waitStatus(t, tab); msg != "1 file sent to Alice's laptop." {
			t.Errorf("tab %d says %q", i+1, msg)
		}
	}
	sameFile(t, file, filepath.Join(in.Dir(), "same.bin"))
	if names, err := os.ReadDir(in.Dir()); err != nil || len(names) != 1 {
		t.Errorf("the folder holds %v (%v), want same.bin alone", names, err)
	}
	if n := starts(l); n != 1 {
		t.Errorf("%d uploads began", n)
	}
}

// TestBrowserNewSetLeavesOutAFileItResumes: a file on its way when the
// page was reloaded, picked again with another file, goes on as the
// upload it was, of the set it began in; the new set counts the other
// file alone. Before, the new set counted both, waited for a file that
// never came under its name, and stayed open ("Interrupted" on the
// device) until the link ended.
func TestBrowserNewSetLeavesOutAFileItResumes(t *testing.T) {
	ctx := newBrowser(t)
	src := t.TempDir()
	big := randomFile(t, src, "big.bin", 40<<20, 12)
	small := randomFile(t, src, "small.txt", 1000, 13)
	s, l, in, wl := startRecordingReceive(t)
	wl.rate.Store(16 << 20)
	uploadTo(t, ctx, base(s)+l.Path(), big)
	waitBytes(t, l, ChunkSize)
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wl.rate.Store(0)
	drain(l)
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles(chromedp.CSS("#files"), []string{big, small})); err != nil {
		t.Fatal(err)
	}
	if msg := waitStatus(t, ctx); msg != "2 files sent to Alice's laptop." {
		t.Fatalf("page says %q", msg)
	}
	sameFile(t, big, filepath.Join(in.Dir(), "big.bin"))
	sameFile(t, small, filepath.Join(in.Dir(), "small.txt"))
	seen := in.seen()
	if len(seen) != 2 {
		t.Fatalf("%d arrivals, want 2 (big.bin once): %+v", len(seen), seen)
	}
	first, second := seen[0].Batch, seen[1].Batch
	if seen[1].Name != "small.txt" || second.ID == "" || second.ID == first.ID || second.Files != 1 || second.Bytes != 1000 {
		t.Errorf("small.txt's set is %+v (big.bin's %+v), want a set of its own of 1 file, 1000 bytes", second, first)
	}
}

// TestBrowserLinkExpiresMidUpload: a receive link whose time runs out while
// its page sends lets the file on its way finish (ReceiveOptions.ExpiryGrace):
// it arrives whole and the page says "sent"; the file waiting, a new upload
// after the expiry, is refused, and the page says why, "this link expired",
// as a reload of the page does ("This link expired."). Before, the expiry
// cut the file on its way and its partial went ("not sent: this link
// expired"), and before that each said "this link has ended" whatever
// ended it. The server's clock is moved past the link's end while a chunk
// is on its way.
func TestBrowserLinkExpiresMidUpload(t *testing.T) {
	ctx := newBrowser(t)
	tmp := t.TempDir()
	wl := newWireListener(t)
	var shift atomic.Int64
	s := Serve(wl, Options{DeviceName: "Alice's laptop", Now: func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }})
	t.Cleanup(func() { s.Close() })
	in, err := NewFolderInbox(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	l, err := s.Receive(in, ReceiveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	big := randomFile(t, tmp, "big.bin", 48<<20, 14)
	wl.rate.Store(4 << 20) // a chunk takes 2 s: the clock moves mid-chunk
	uploadTo(t, ctx, base(s)+l.Path(), big, randomFile(t, tmp, "later.txt", 10, 15))
	waitBytes(t, l, ChunkSize+ChunkSize/2)
	shift.Store(int64(2 * time.Hour)) // the link's next request finds it expired
	drain(l)
	wl.rate.Store(0)
	if msg := waitStatus(t, ctx); msg != "1 file sent to Alice's laptop; 1 file was not sent. This link has ended: ask for a new one to send more." {
		t.Fatalf("page says %q", msg)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#list .state")).map(e => e.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"sent · 50 MB", "not sent: this link expired"}; !slices.Equal(states, want) {
		t.Fatalf("rows %q, want %q", states, want)
	}
	if !errors.Is(l.Err(), ErrExpired) {
		t.Fatalf("Err %v", l.Err())
	}
	l.wait() // the link's end, once the file on its way finished
	sameFile(t, big, filepath.Join(in.Dir(), "big.bin"))
	if _, err := os.Stat(filepath.Join(in.Dir(), "later.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("later.txt: %v", err)
	}
}
