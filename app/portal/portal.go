// Package portal asks the XDG desktop portal (org.freedesktop.portal.Desktop
// on the D-Bus session bus) for files: its FileChooser shows the desktop's
// own file dialog (GTK's or KDE's), with several files at once, typed
// paths and the usual places. It needs no Fyne; package app falls back to
// Fyne's dialog when no portal answers (ErrUnavailable).
package portal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/godbus/dbus/v5"
)

const (
	busName     = "org.freedesktop.portal.Desktop"
	objectPath  = "/org/freedesktop/portal/desktop"
	chooserIfc  = "org.freedesktop.portal.FileChooser"
	requestIfc  = "org.freedesktop.portal.Request"
	responseSig = requestIfc + ".Response"
)

// ErrUnavailable: no portal with a FileChooser answers on this bus.
var ErrUnavailable = errors.New("portal: no file chooser portal on the session bus")

// Request says what to ask for.
type Request struct {
	// Parent identifies the window the dialog belongs to ("x11:1c00007"),
	// or "" when unknown.
	Parent string
	Title  string
	// Folders asks for folders instead of files; Multiple allows several.
	Folders, Multiple bool
	// AcceptLabel names the dialog's button ("Send"); "" is the portal's.
	AcceptLabel string
}

// maxURIs bounds what a portal's answer may make us keep.
const maxURIs = 100_000

// OpenFiles shows the portal's file dialog and waits for the user: it
// returns the chosen local paths, none when the user cancelled, or
// ErrUnavailable when there is no portal to ask. ctx ends the wait (and
// closes the dialog).
func OpenFiles(ctx context.Context, conn *dbus.Conn, req Request) ([]string, error) {
	// The answer comes as a signal on a request object whose path follows
	// from our name and a token we choose: subscribe before asking, so an
	// answer that comes at once is not missed.
	token := newToken()
	sender := strings.TrimPrefix(strings.ReplaceAll(conn.Names()[0], ".", "_"), ":")
	handle := dbus.ObjectPath("/org/freedesktop/portal/desktop/request/" + sender + "/" + token)
	match := []dbus.MatchOption{dbus.WithMatchObjectPath(handle), dbus.WithMatchInterface(requestIfc), dbus.WithMatchMember("Response")}
	if err := conn.AddMatchSignalContext(ctx, match...); err != nil {
		return nil, fmt.Errorf("portal: %w", err)
	}
	defer conn.RemoveMatchSignalContext(context.Background(), match...)
	signals := make(chan *dbus.Signal, 4)
	conn.Signal(signals)
	defer conn.RemoveSignal(signals)

	opts := map[string]dbus.Variant{
		"handle_token": dbus.MakeVariant(token),
		"modal":        dbus.MakeVariant(true),
		"multiple":     dbus.MakeVariant(req.Multiple),
		"directory":    dbus.MakeVariant(req.Folders),
	}
	if req.AcceptLabel != "" {
		opts["accept_label"] = dbus.MakeVariant(req.AcceptLabel)
	}
	var got dbus.ObjectPath
	err := conn.Object(busName, objectPath).CallWithContext(ctx, chooserIfc+".OpenFile", 0, req.Parent, req.Title, opts).Store(&got)
	if err != nil {
		var de dbus.Error
		if errors.As(err, &de) || errors.Is(err, dbus.ErrMsgNoObject) {
			// Not there, or there without a FileChooser (a portal whose
			// backend has none): the caller's own dialog does it.
			return nil, fmt.Errorf("%w (%v)", ErrUnavailable, err)
		}
		return nil, fmt.Errorf("portal: %w", err)
	}
	if got != handle {
		// An older portal picks its own path: listen there too.
		m := []dbus.MatchOption{dbus.WithMatchObjectPath(got), dbus.WithMatchInterface(requestIfc), dbus.WithMatchMember("Response")}
		if err := conn.AddMatchSignalContext(ctx, m...); err == nil {
			defer conn.RemoveMatchSignalContext(context.Background(), m...)
		}
		handle = got
	}
	for {
		select {
		case <-ctx.Done():
			conn.Object(busName, handle).Call(requestIfc+".Close", 0)
			return nil, ctx.Err()
		case sig := <-signals:
			if sig == nil || sig.Path != handle || sig.Name != responseSig {
				continue
			}
			return parseResponse(sig.Body)
		}
	}
}

// parseResponse reads a Response signal's body: (u response, a{sv} results).
// Only local file:// URIs are taken; a malformed answer is an error.
func parseResponse(body []any) ([]string, error) {
	if len(body) != 2 {
		return nil, errors.New("portal: malformed response")
	}
	code, ok := body[0].(uint32)
	results, ok2 := body[1].(map[string]dbus.Variant)
	if !ok || !ok2 {
		return nil, errors.New("portal: malformed response")
	}
	if code != 0 { // 1: cancelled, 2: ended some other way
		return nil, nil
	}
	v, ok := results["uris"]
	if !ok {
		return nil, nil
	}
	uris, ok := v.Value().([]string)
	if !ok || len(uris) > maxURIs {
		return nil, errors.New("portal: malformed list of files")
	}
	var paths []string
	for _, s := range uris {
		p, err := localPath(s)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// localPath turns a file:// URI into a path.
func localPath(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "file" || u.Host != "" && u.Host != "localhost" || u.Path == "" {
		return "", fmt.Errorf("portal: %q is not a local file", s)
	}
	return filepath.FromSlash(u.Path), nil
}

func newToken() string {
	var b [8]byte
	rand.Read(b[:])
	return "ferry" + hex.EncodeToString(b[:])
}
