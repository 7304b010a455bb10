package weblink

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ferrydrop/ferry/internal/clock"
)

// assets are the pages' templates, style, script and tus-js-client
// (assets/tus.min.js, from the npm package tus-js-client 4.3.1, MIT: its
// licence is assets/tus-js-client.LICENSE and is served beside it).
//
//go:embed assets
var assets embed.FS

// pages holds every page's template; html/template escapes each name in
// its context, so no markup from a file name ever renders.
var pages = template.Must(template.ParseFS(assets, "assets/page.html"))

// served are the assets a browser may fetch under /a/.
var served = map[string]string{
	"style.css":             "text/css; charset=utf-8",
	"upload.js":             "text/javascript; charset=utf-8",
	"tus.min.js":            "text/javascript; charset=utf-8",
	"tus-js-client.LICENSE": "text/plain; charset=utf-8",
}

// serveAsset answers /a/<name> from the embedded table; nothing else of
// the embedded folder (templates) or of the disk is reachable.
func serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	ctype, ok := served[name]
	if !ok || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		notFound(w)
		return
	}
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		notFound(w)
		return
	}
	w.Header().Set("Content-Type", ctype)
	// No token in these: a browser may keep them for the link's lifetime.
	w.Header().Set("Cache-Control", "max-age=3600")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(b))
}

// pageData is what every page's head and foot read.
type pageData struct {
	Title  string
	Device string
	PIN    bool
}

// render writes a page with status code.
func render(w http.ResponseWriter, code int, name string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "cannot render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// page answers with a short page of a title and a sentence.
func page(w http.ResponseWriter, code int, title, msg string) {
	render(w, code, "message", struct {
		pageData
		Message string
	}{pageData{Title: title}, msg})
}

// pinPage asks for the link's PIN, with an error from the last try.
// asked is the page of a share the PIN opens (askedView).
func (l *Link) pinPage(w http.ResponseWriter, code int, errMsg string, asked askedView) {
	render(w, code, "pin", struct {
		pageData
		Error  string
		Digits bool // a PIN of digits: the field asks a phone for its number pad
		Hidden []hiddenField
	}{pageData{Title: "Type the PIN", Device: l.s.opts.DeviceName, PIN: true}, errMsg, allDigits(l.opts.PIN), asked.hidden()})
}

// askedView is the page of a share a request asks for (its query's, or the
// PIN form's): a view (every file, a search, the folders) and its page.
type askedView struct {
	v    view
	page int // from 1
}

// hidden is what the PIN form carries to come back to it.
func (a askedView) hidden() []hiddenField {
	h := a.v.hidden()
	if a.page > 1 {
		h = append([]hiddenField{{"page", strconv.Itoa(a.page)}}, h...)
	}
	return h
}

// href is where the PIN form leads, relative to the link's pages.
func (a askedView) href() string {
	h := a.v.href(max(a.page, 1))
	if strings.HasPrefix(h, "?") {
		h = "./" + h
	}
	return h
}

// askedView reads the page of a share a request asks for: from its query,
// or from the PIN form's fields (page, q, folders). Each is read by its
// parser (parsePage, parseSearch, askedFolders) and written again, so
// nothing but a page number, a search's text (escaped) and the folder list
// goes through the PIN form into a redirect; anything else is every file's
// first page.
func (l *Link) askedView(r *http.Request, form bool) askedView {
	if l.share == nil {
		return askedView{page: 1}
	}
	q := r.URL.RawQuery
	if form {
		vals := url.Values{}
		for _, k := range []string{"page", "q", "folders"} {
			if v, ok := r.PostForm[k]; ok {
				vals[k] = v
			}
		}
		q = vals.Encode()
	}
	var a askedView
	pages := l.share.pages()
	switch search, bad := parseSearch(q); {
	case askedFolders(q):
		a.v.folders = true
		pages = max(1, (len(l.share.folders)+pageRows-1)/pageRows)
	case bad == "" && search != "":
		a.v.search = search
		pages = maxPages // counted once the results are
	}
	if p, ok := parsePage(q, pages); ok {
		a.page = p
	} else {
		a.page = 1
	}
	return a
}

// allDigits reports whether pin is made of ASCII digits only. A phone
// shows a PIN field marked numeric with a number pad, on which a PIN with
// letters (the app takes any) could not be typed; with the 10 tries a link
// allows, saying the PIN is digits helps no guesser.
func allDigits(pin string) bool {
	for _, r := range pin {
		if r < '0' || r > '9' {
			return false
		}
	}
	return pin != ""
}

// until says when a link ends, in the device's local time.
func (l *Link) until() string { return clock.At(l.expires, l.s.opts.Now()) }

// humanSize spells a byte count the way the pages and the upload script do
// (decimal units).
func humanSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	for f >= unit && i < len(units)-1 {
		f /= unit
		i++
	}
	if f < 10 {
		return fmt.Sprintf("%.1f %s", f, units[i])
	}
	return fmt.Sprintf("%.0f %s", f, units[i])
}

// attachment is a Content-Disposition value that makes a browser save the
// answer as name (RFC 6266): an ASCII fallback in filename, with anything
// outside printable ASCII (and the quote and backslash) replaced by "_",
// and the UTF-8 name percent-encoded in filename* (RFC 8187).
func attachment(name string) string {
	name = path.Base(name)
	if name == "." || name == "/" || name == "" {
		name = "download"
	}
	var ascii strings.Builder
	for _, r := range name {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' || r == '%' {
			ascii.WriteByte('_')
			continue
		}
		ascii.WriteRune(r)
	}
	v := mime.FormatMediaType("attachment", map[string]string{"filename": ascii.String()})
	if v == "" {
		v = `attachment; filename="download"`
	}
	if ascii.String() != name && utf8.ValidString(name) {
		v += "; filename*=UTF-8''" + extValue(name)
	}
	return v
}

// extValue percent-encodes s as an RFC 8187 ext-value's value: every byte
// but attr-char.
func extValue(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}
