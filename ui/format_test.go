package ui

import (
	"testing"
	"time"
)

func TestHumanFormats(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {999, "999 B"}, {1000, "1.0 kB"}, {1_500_000, "1.5 MB"}, {-1, "unknown"}, {3_200_000_000, "3.2 GB"}} {
		if got := HumanBytes(c.n); got != c.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	if got := HumanETA(90 * time.Second); got != "2 min left" {
		t.Errorf("HumanETA = %q", got)
	}
	if got := ShortID("ABCDEFGHIJ"); got != "ABCD-EFGH" {
		t.Errorf("ShortID = %q", got)
	}
	if got := GroupID("ABCDEFGHIJ"); got != "ABCD-EFGH-IJ" {
		t.Errorf("GroupID = %q", got)
	}
}

// The text limit reads as README says (64 KiB), and lengths in the same units.
func TestTextSize(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {1536, "1.5 KiB"}, {MaxTextBytes, "64 KiB"}, {MaxTextBytes + 1, "64 KiB"}} {
		if got := textSize(tc.n); got != tc.want {
			t.Errorf("textSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
