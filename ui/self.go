package ui

import (
	"errors"
	"fmt"
	"image"
	"net"
	"net/url"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/canvas"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"
	qrcode "github.com/skip2/go-qrcode"

	"github.com/ferrydrop/ferry/internal/deviceid"
)

// Being found by hand: this device's addresses and a link (as text and as
// a QR code) that carries address, port and device ID, which "Add device"
// on another Ferry accepts as well as a plain host:port.

// linkScheme starts a device link: ferry://HOST:PORT?id=DEVICEID.
const linkScheme = "ferry"

// DeviceLink is the link to the device id at addr ("host:port").
func DeviceLink(addr, id string) string {
	u := url.URL{Scheme: linkScheme, Host: addr}
	if id != "" {
		u.RawQuery = url.Values{"id": {id}}.Encode()
	}
	return u.String()
}

// errBadAddress: what was typed is neither host:port nor a device link.
var errBadAddress = errors.New("not an address")

// ParseDeviceAddress reads what the user typed or pasted into "Add
// device": "host:port", "[v6]:port", or a device link (DeviceLink). It
// returns the address and, from a link, the device ID that must answer.
func ParseDeviceAddress(s string) (addr, id string, err error) {
	s = strings.TrimSpace(s)
	if len(s) > 512 {
		return "", "", fmt.Errorf("%w: too long", errBadAddress)
	}
	if strings.HasPrefix(strings.ToLower(s), linkScheme+"://") {
		u, err := url.Parse(s)
		if err != nil {
			return "", "", fmt.Errorf("%w: %v", errBadAddress, err)
		}
		addr = u.Host
		if id = u.Query().Get("id"); id != "" {
			if id, err = deviceid.Parse(id); err != nil {
				return "", "", fmt.Errorf("%w: the device ID in the link is not one", errBadAddress)
			}
		}
	} else {
		addr = s
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil || h == "" || p == "" || strings.ContainsAny(h, " /?#@") {
		return "", "", fmt.Errorf("%w: want host:port", errBadAddress)
	}
	return addr, id, nil
}

// validID reports whether s is a Ferry device ID as it is kept and shown
// (deviceid.Parse: the one reading of an ID every part of Ferry shares).
func validID(s string) bool {
	id, err := deviceid.Parse(s)
	return err == nil && id == s
}

// qrImage draws text as a QR code; nil when it cannot.
func qrImage(text string, px int) image.Image {
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return nil
	}
	return q.Image(px)
}

// selfView is what another device needs to add this one by hand: the
// addresses, the link, and the link as a QR code.
func (u *UI) selfView(qrSize float32) (fyne.CanvasObject, string) {
	addrs := u.be.SelfAddresses()
	if len(addrs) == 0 {
		l := widget.NewLabel("Receiving is off, so this device has no address to give. Turn receiving on in Settings.")
		l.Wrapping = fyne.TextWrapWord
		return l, ""
	}
	link := DeviceLink(addrs[0], u.self.ID)
	lines := widget.NewLabel("Addresses: " + strings.Join(addrs, ", ") + "\nDevice ID: " + GroupID(u.self.ID))
	lines.Wrapping = fyne.TextWrapBreak
	lines.SizeName = theme.SizeNameCaptionText
	objs := []fyne.CanvasObject{}
	if img := qrImage(link, 256); img != nil {
		qr := canvas.NewImageFromImage(img)
		qr.FillMode = canvas.ImageFillContain
		qr.ScaleMode = canvas.ImageScalePixels
		qr.SetMinSize(fyne.NewSize(qrSize, qrSize))
		objs = append(objs, container.NewCenter(qr))
	}
	return container.NewVBox(append(objs, lines)...), link
}

// showSelf shows this device's addresses and QR code, with the link to copy.
func (u *UI) showSelf() {
	view, link := u.selfView(200)
	// The status line whole, which a narrow window shortens.
	status := widget.NewLabel(u.status.full)
	status.Wrapping = fyne.TextWrapWord
	hint := widget.NewLabel("On the other device, choose \"Add device…\" and paste the link or type an address.")
	hint.Wrapping = fyne.TextWrapWord
	var d *dialog.CustomDialog
	closeBtn := u.newButton("Close", nil, func() { d.Hide() })
	buttons := []fyne.CanvasObject{closeBtn}
	if link != "" {
		copyBtn := u.newButton("Copy link", theme.ContentCopyIcon(), func() { u.copyText(link) })
		buttons = append([]fyne.CanvasObject{copyBtn}, buttons...)
	}
	scroll := container.NewVScroll(container.NewVBox(status, view, hint))
	d = dialog.NewCustomWithoutButtons("This device", scroll, u.win)
	d.SetButtons(buttons)
	fitScroll(d, scroll, 440)
	u.showModal(d, &modal{dismiss: d.Hide, confirm: d.Hide, scroll: scroll}, closeBtn)
}

// copyText puts text on the clipboard.
func (u *UI) copyText(text string) { u.app.Clipboard().SetContent(text) }

// TextLink returns the text as a link to open, when the whole text (but
// spaces around it) is one http, https or mailto URL; nil otherwise.
func TextLink(text string) *url.URL {
	t := strings.TrimSpace(text)
	if t == "" || len(t) > 8192 || strings.ContainsAny(t, " \n\t") {
		return nil
	}
	l, err := url.Parse(t)
	if err != nil {
		return nil
	}
	switch strings.ToLower(l.Scheme) {
	case "http", "https":
		if l.Host == "" {
			return nil
		}
		return l
	case "mailto":
		return l
	}
	return nil
}

// openLink opens a link from a text in the browser.
func (u *UI) openLink(l *url.URL) {
	open := u.app.OpenURL
	if u.opt.OpenURL != nil {
		open = u.opt.OpenURL
	}
	if err := open(l); err != nil {
		u.showError("Could not open the link", err)
	}
}
