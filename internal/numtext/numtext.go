// Package numtext writes numbers for people to read.
package numtext

import (
	"strconv"
	"strings"
)

// Group writes n with its thousands apart: "999", "1,000", "100,000"
// ("100000 files" is hard to read at a glance). The comma is English's,
// as is the rest of Ferry's text.
func Group(n int) string {
	s := strconv.Itoa(n)
	digits := strings.TrimPrefix(s, "-")
	var b strings.Builder
	b.WriteString(s[:len(s)-len(digits)])
	for i, c := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Count writes how many of a thing there are, its thousands apart: "1
// file", "0 files", "105,252 files" (word takes an "s" for any other
// number than one).
func Count(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return Group(n) + " " + word + "s"
}
