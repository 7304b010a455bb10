package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	"golang.org/x/image/draw"
)

// appID names the icon files, as the .desktop file and AppStream expect.
const appID = "io.ferrydrop.ferry"

// hicolorSizes are the freedesktop hicolor theme sizes we ship.
var hicolorSizes = []int{16, 24, 32, 48, 64, 128, 256, 512}

// icoSizes are what Windows asks for: small icons, Start menu, Explorer's
// large and extra large views.
var icoSizes = []int{16, 24, 32, 48, 64, 256}

// writeIcons scales the source PNG to every size; the scaler and the PNG
// encoder are deterministic, so the files are the same on every build.
func writeIcons(src, outDir string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("icons: %w", err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("icons: %s: %w", src, err)
	}
	scaled := map[int][]byte{}
	encode := func(size int) ([]byte, error) {
		if b, ok := scaled[size]; ok {
			return b, nil
		}
		var buf bytes.Buffer
		if err := png.Encode(&buf, scale(img, size)); err != nil {
			return nil, err
		}
		scaled[size] = buf.Bytes()
		return buf.Bytes(), nil
	}
	for _, n := range hicolorSizes {
		b, err := encode(n)
		if err != nil {
			return fmt.Errorf("icons: %w", err)
		}
		dir := filepath.Join(outDir, "hicolor", fmt.Sprintf("%dx%d", n, n), "apps")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("icons: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, appID+".png"), b, 0o644); err != nil {
			return fmt.Errorf("icons: %w", err)
		}
	}
	var pngs [][]byte
	for _, n := range icoSizes {
		b, err := encode(n)
		if err != nil {
			return fmt.Errorf("icons: %w", err)
		}
		pngs = append(pngs, b)
	}
	if err := os.WriteFile(filepath.Join(outDir, "ferry.ico"), ico(icoSizes, pngs), 0o644); err != nil {
		return fmt.Errorf("icons: %w", err)
	}
	return nil
}

// scale resizes img to size x size (the source is square).
func scale(img image.Image, size int) image.Image {
	if b := img.Bounds(); b.Dx() == size && b.Dy() == size {
		return img
	}
	dst := image.NewNRGBA(image.Rect(0, 0, size, size))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	return dst
}

// ico packs PNG images into a .ico file: an ICONDIR header, one 16-byte
// ICONDIRENTRY per image, then the images. A width or height of 256 is
// written as 0, as the format requires.
func ico(sizes []int, pngs [][]byte) []byte {
	var buf bytes.Buffer
	le := binary.LittleEndian
	buf.Write(le.AppendUint16(nil, 0))                  // reserved
	buf.Write(le.AppendUint16(nil, 1))                  // type: icon
	buf.Write(le.AppendUint16(nil, uint16(len(sizes)))) // count
	offset := 6 + 16*len(sizes)
	for i, n := range sizes {
		dim := byte(n)
		if n >= 256 {
			dim = 0
		}
		buf.Write([]byte{dim, dim, 0, 0})                     // width, height, colours, reserved
		buf.Write(le.AppendUint16(nil, 1))                    // planes
		buf.Write(le.AppendUint16(nil, 32))                   // bits per pixel
		buf.Write(le.AppendUint32(nil, uint32(len(pngs[i])))) // size
		buf.Write(le.AppendUint32(nil, uint32(offset)))       // offset
		offset += len(pngs[i])
	}
	for _, p := range pngs {
		buf.Write(p)
	}
	return buf.Bytes()
}
