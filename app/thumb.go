package app

import (
	"image"
	_ "image/gif" // thumbnails of received pictures
	_ "image/jpeg"
	_ "image/png"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"

	"golang.org/x/image/draw"
)

// Thumbnails are decoded only from files and pictures of bounded size: a
// received file is the peer's input.
const (
	thumbPixels   = 96       // the side a thumbnail is scaled to fit
	maxThumbFile  = 40 << 20 // larger files get no thumbnail
	maxThumbImage = 50e6     // nor pictures of more pixels than this
)

// thumbnail decodes the picture at p and scales it to fit px x px; nil when
// p is no picture Go decodes (JPEG, PNG, GIF) or is too large to try.
func thumbnail(p string, px int) image.Image {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxThumbFile {
		return nil
	}
	cfg, _, err := image.DecodeConfig(f)
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || float64(cfg.Width)*float64(cfg.Height) > maxThumbImage {
		return nil
	}
	if _, err := f.Seek(0, 0); err != nil {
		return nil
	}
	src, _, err := image.Decode(f)
	if err != nil {
		return nil
	}
	b := src.Bounds()
	w, h := px, px
	if b.Dx() > b.Dy() {
		h = max(1, px*b.Dy()/b.Dx())
	} else {
		w = max(1, px*b.Dx()/b.Dy())
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), src, b, draw.Src, nil)
	return dst
}

// hostAddrs lists this host's addresses with port, as others on the
// network would dial them: IPv4 before IPv6, private networks first;
// loopback and link-local addresses (no use without a zone) are left out.
func hostAddrs(port int, interfaces func() ([]net.Interface, error)) []string {
	ifs, err := interfaces()
	if err != nil {
		return nil
	}
	var ips []netip.Addr
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			pfx, err := netip.ParsePrefix(a.String())
			if err != nil {
				continue
			}
			ip := pfx.Addr().Unmap()
			if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() {
				continue
			}
			ips = append(ips, ip)
		}
	}
	rank := func(ip netip.Addr) int {
		switch {
		case ip.Is4() && ip.IsPrivate():
			return 0
		case ip.Is4():
			return 1
		case ip.IsPrivate():
			return 2
		}
		return 3
	}
	slices.SortStableFunc(ips, func(a, b netip.Addr) int { return rank(a) - rank(b) })
	out := make([]string, 0, len(ips))
	for _, ip := range slices.Compact(ips) {
		out = append(out, net.JoinHostPort(ip.String(), strconv.Itoa(port)))
	}
	return out
}
