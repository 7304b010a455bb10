package weblink

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
)

// maxFormBytes bounds the body of a request that is not an upload (the PIN
// form).
const maxFormBytes = 4 << 10

// serve answers a request for the link; rest is the path after the token.
func (l *Link) serve(w http.ResponseWriter, r *http.Request, rest string) {
	var graced func() bool
	if l.recv != nil {
		// After the link expired, the requests of the uploads it lets
		// finish (receiver.graceRequest).
		graced = func() bool { return l.recv.graceRequest(r, rest) }
	}
	l.enterGraced(w, r, graced, func() { l.route(w, r, rest) })
}

// ServeFile answers r with file i of a share link (Files' order) the way
// the link's page downloads it: ranges, an Activity of the device r comes
// from with its progress, Once, and 410 once the link ended. It is for
// another protocol's server that serves the share too (LocalSend's
// download API), which decided beforehand who may download: no PIN is
// asked here; the link's bound on devices holds.
func (l *Link) ServeFile(w http.ResponseWriter, r *http.Request, i int) {
	if l.share == nil || i < 0 || i >= len(l.share.files) {
		notFound(w)
		return
	}
	l.enter(w, r, func() {
		if dev, ok := l.admit(w, r); ok {
			l.share.serveFile(w, r, i, dev)
		}
	})
}

// enter runs fn as one of the link's requests: not at all once the link
// ended (410), and cut short when it ends meanwhile.
func (l *Link) enter(w http.ResponseWriter, r *http.Request, fn func()) {
	l.enterGraced(w, r, nil, fn)
}

// enterGraced is enter where graced (nil: never) says whether the request
// is one of an upload a receive link lets finish after it expired: such a
// request is let in after the expiry, and is not cut by it.
func (l *Link) enterGraced(w http.ResponseWriter, r *http.Request, graced func() bool, fn func()) {
	if l.expired() {
		l.end(ErrExpired)
	}
	l.mu.Lock()
	late := l.ctx.Err() != nil // let in after the end: graced
	if late && (graced == nil || !graced()) {
		l.mu.Unlock()
		gone(w, context0(l))
		return
	}
	l.reqs.Add(1) // before end's cancel (under mu), so the clean-up waits for us
	l.mu.Unlock()
	defer l.reqs.Done()
	// When the link is stopped or expires, a request blocked on a client
	// that stopped reading or sending ends at once. A one-time link that
	// ended lets the requests in flight finish, and an expired receive
	// link those of the uploads it lets finish, until their grace ends.
	rc := http.NewResponseController(w)
	cut := func() {
		past := time.Unix(1, 0)
		rc.SetReadDeadline(past)
		rc.SetWriteDeadline(past)
	}
	if !late {
		// Decided at the end (the uploads graced are picked before it),
		// not later: the upload may have finished in this very request.
		defer context.AfterFunc(l.ctx, func() {
			if errors.Is(context.Cause(l.ctx), ErrOnce) {
				return
			}
			if graced != nil && graced() {
				return
			}
			cut()
		})()
	}
	if l.recv != nil && graced != nil {
		defer context.AfterFunc(l.recv.graceCtx, func() {
			if l.ctx.Err() != nil {
				cut()
			}
		})()
	}
	fn()
}

// route answers a request of the link's own pages.
func (l *Link) route(w http.ResponseWriter, r *http.Request, rest string) {
	dev, ok := l.admit(w, r)
	if !ok {
		return
	}
	if rest == "pin" {
		l.servePIN(w, r, dev)
		return
	}
	if !l.authorized(r) {
		if rest == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
			if _, locked, _ := l.Guards(); locked {
				lockedPage(w)
				return
			}
			l.pinPage(w, http.StatusOK, "", l.askedView(r, false))
			return
		}
		http.Error(w, "this link asks for its PIN first", http.StatusForbidden)
		return
	}
	if l.kind == KindReceive {
		l.recv.serve(w, r, rest, dev)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	l.share.serve(w, r, rest, dev)
}

// context0 is why the link ended.
func context0(l *Link) error {
	if err := l.Err(); err != nil {
		return err
	}
	return ErrStopped
}

// servePIN takes the PIN form.
func (l *Link) servePIN(w http.ResponseWriter, r *http.Request, dev interface{ String() string }) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if l.opts.PIN == "" {
		http.Redirect(w, r, "./", http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form is too large or malformed", http.StatusBadRequest)
		return
	}
	typed := strings.TrimSpace(r.PostForm.Get("pin"))
	session, err := l.checkPIN(remoteAddr(r), typed)
	switch {
	case errors.Is(err, errPINLocked):
		l.emit(Event{Kind: EventPIN, Device: remoteAddr(r), Err: err})
		lockedPage(w)
		return
	case errors.Is(err, errWrongPIN):
		l.emit(Event{Kind: EventPIN, Device: remoteAddr(r), Err: err})
		l.pinPage(w, http.StatusForbidden, "That PIN is not right. Try again.", l.askedView(r, true))
		return
	case err != nil:
		http.Error(w, "cannot open a session", http.StatusInternalServerError)
		return
	}
	l.emit(Event{Kind: EventPIN, Device: remoteAddr(r)})
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: session, Path: l.Path(),
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Expires: l.expires, MaxAge: int(time.Until(l.expires).Seconds()) + 1,
	})
	// Back to the page of files the PIN was asked on.
	http.Redirect(w, r, l.askedView(r, true).href(), http.StatusSeeOther)
}

// lockedPage answers a device without a session at a link that took its
// wrong PINs: it is told so, with no PIN form (before, the form was shown,
// and the right PIN typed into it was refused).
func lockedPage(w http.ResponseWriter) {
	page(w, http.StatusForbidden, "Link locked", "Too many wrong PINs were typed for this link, so it takes no PIN any more. Ask for a new link.")
}

// notFound answers a path that names no link.
func notFound(w http.ResponseWriter) {
	page(w, http.StatusNotFound, "No such link", "This link does not exist. Check that it was typed whole, or ask for a new one.")
}

// endedHeader is the header of a link's answers after it ended (410) that
// says why, for its upload page: "stopped", "expired", "once" or "closed"
// (endedWord). Before, the page said "this link has ended" whatever ended
// it, where a reload of it said "This link expired."
const endedHeader = "Ferry-Link-Ended"

// endedWord is why a link ended, as endedHeader says it.
func endedWord(why error) string {
	switch {
	case errors.Is(why, ErrExpired):
		return "expired"
	case errors.Is(why, ErrOnce):
		return "once"
	case errors.Is(why, ErrClosed):
		return "closed"
	}
	return "stopped"
}

// gone answers a link that ended.
func gone(w http.ResponseWriter, why error) {
	w.Header().Set(endedHeader, endedWord(why))
	msg := "This link was stopped by its owner."
	switch {
	case errors.Is(why, ErrExpired):
		msg = "This link expired."
	case errors.Is(why, ErrOnce):
		msg = "This link was for one download, which is done."
	case errors.Is(why, ErrClosed):
		msg = "Ferry was closed on the device that made this link."
	}
	page(w, http.StatusGone, "Link ended", msg+" Ask for a new link.")
}
