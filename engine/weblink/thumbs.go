package weblink

import (
	"bytes"
	"image"
	_ "image/gif" // decoders for thumbnails of shared pictures
	"image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/webp"
)

// Thumbnails are made on this device, small (thumbSide pixels), one at a
// time, and kept in memory up to thumbCacheBytes; a picture whose header
// says it is over maxThumbPixels, or whose file is over maxThumbFileBytes,
// gets none (decoding it would take more memory than the whole share
// server).
const (
	thumbSide         = 96
	thumbCacheBytes   = 8 << 20
	maxThumbPixels    = 40_000_000
	maxThumbFileBytes = 64 << 20
)

// thumbs makes and keeps a share's thumbnails.
type thumbs struct {
	sh   *share
	gate chan struct{} // one decode at a time

	mu    sync.Mutex // guards the fields below
	cache map[int][]byte
	none  map[int]bool // rows that get no thumbnail
	bytes int
}

func newThumbs(sh *share) *thumbs {
	return &thumbs{sh: sh, gate: make(chan struct{}, 1), cache: map[int][]byte{}, none: map[int]bool{}}
}

// serve answers the thumbnail of row i: a JPEG, or 404 when it has none.
func (t *thumbs) serve(w http.ResponseWriter, r *http.Request, i int) {
	if !isPicture(t.sh.files[i].name) {
		http.NotFound(w, r)
		return
	}
	b := t.get(r, i)
	if b == nil {
		// A picture without a thumbnail (too large to decode here, not
		// what its name says, unreadable): a plain picture sign, not the
		// browser's broken image.
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, noThumb)
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
}

func (t *thumbs) get(r *http.Request, i int) []byte {
	t.mu.Lock()
	b, none := t.cache[i], t.none[i]
	t.mu.Unlock()
	if b != nil || none {
		return b
	}
	select {
	case t.gate <- struct{}{}:
	case <-r.Context().Done():
		return nil
	}
	defer func() { <-t.gate }()
	b = t.make(i)
	t.mu.Lock()
	defer t.mu.Unlock()
	if b == nil {
		t.none[i] = true
		return nil
	}
	if t.bytes+len(b) <= thumbCacheBytes {
		t.cache[i] = b
		t.bytes += len(b)
	}
	return b
}

// make decodes row i and scales it to fit thumbSide, or returns nil.
func (t *thumbs) make(i int) []byte {
	f, fi, err := t.sh.open(i)
	if err != nil || fi.Size() > maxThumbFileBytes {
		if f != nil {
			f.Close()
		}
		return nil
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > maxThumbPixels {
		return nil
	}
	if _, err := f.Seek(0, 0); err != nil {
		return nil
	}
	img, _, err := image.Decode(f)
	if err != nil {
		return nil
	}
	b := img.Bounds()
	w, h := thumbSide, thumbSide
	if b.Dx() > b.Dy() {
		h = max(1, thumbSide*b.Dy()/b.Dx())
	} else {
		w = max(1, thumbSide*b.Dx()/b.Dy())
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	var out bytes.Buffer
	if err := jpeg.Encode(&out, dst, &jpeg.Options{Quality: 80}); err != nil {
		return nil
	}
	return out.Bytes()
}

// noThumb is what a picture without a thumbnail shows: a frame with a
// hill and a sun, in the page's quiet grey.
const noThumb = `<svg xmlns="http://www.w3.org/2000/svg" width="96" height="96" viewBox="0 0 96 96">` +
	`<rect x="14" y="22" width="68" height="52" rx="6" fill="none" stroke="#8a8f98" stroke-width="4"/>` +
	`<circle cx="36" cy="40" r="6" fill="#8a8f98"/>` +
	`<path d="M18 70 L40 52 L52 62 L64 48 L80 66 L80 70 Z" fill="#8a8f98"/></svg>`
