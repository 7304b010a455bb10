//go:build ignore

// icon_gen draws Ferry's app icon: a white paper plane over a wave on a
// rounded blue square. Run: go run assets/icon_gen.go (writes assets/icon.png).
package main

import (
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
)

const size = 512
const ss = 4 // supersampling per axis

type pt struct{ x, y float64 }

func inPoly(p pt, poly []pt) bool {
	in := false
	for i, j := 0, len(poly)-1; i < len(poly); j, i = i, i+1 {
		a, b := poly[i], poly[j]
		if (a.y > p.y) != (b.y > p.y) && p.x < (b.x-a.x)*(p.y-a.y)/(b.y-a.y)+a.x {
			in = !in
		}
	}
	return in
}

func inRoundRect(p pt, x0, y0, x1, y1, r float64) bool {
	if p.x < x0 || p.x > x1 || p.y < y0 || p.y > y1 {
		return false
	}
	cx := math.Max(x0+r, math.Min(p.x, x1-r))
	cy := math.Max(y0+r, math.Min(p.y, y1-r))
	return (p.x-cx)*(p.x-cx)+(p.y-cy)*(p.y-cy) <= r*r
}

func lerp(a, b uint8, t float64) float64 { return float64(a) + (float64(b)-float64(a))*t }

func main() {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	top := color.NRGBA{0x2f, 0x8c, 0xff, 255}
	bottom := color.NRGBA{0x1a, 0x4f, 0xc4, 255}
	// Paper plane: body (bright) and folded wing (shaded).
	body := []pt{{110, 250}, {410, 120}, {250, 390}, {215, 300}}
	wing := []pt{{215, 300}, {410, 120}, {240, 330}}
	fold := []pt{{215, 300}, {240, 330}, {250, 390}}
	wave := func(x float64) float64 { return 405 + 14*math.Sin((x-60)/392*2*math.Pi*1.5) }
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			var r, g, b, a float64
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					p := pt{float64(x) + (float64(sx)+0.5)/ss, float64(y) + (float64(sy)+0.5)/ss}
					if !inRoundRect(p, 24, 24, 488, 488, 104) {
						continue
					}
					t := p.y / size
					cr, cg, cb := lerp(top.R, bottom.R, t), lerp(top.G, bottom.G, t), lerp(top.B, bottom.B, t)
					switch {
					case inPoly(p, wing):
						cr, cg, cb = 0xd6, 0xe6, 0xff
					case inPoly(p, fold):
						cr, cg, cb = 0xb8, 0xd0, 0xf5
					case inPoly(p, body):
						cr, cg, cb = 255, 255, 255
					case p.y > wave(p.x) && p.y < wave(p.x)+22 && p.x > 80 && p.x < 432:
						cr, cg, cb = 0x9f, 0xd0, 0xff
					}
					r, g, b, a = r+cr, g+cg, b+cb, a+1
				}
			}
			if a == 0 {
				continue
			}
			n := float64(ss * ss)
			img.SetNRGBA(x, y, color.NRGBA{uint8(r / a), uint8(g / a), uint8(b / a), uint8(255 * a / n)})
		}
	}
	f, err := os.Create("assets/icon.png")
	if err != nil {
		log.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}
