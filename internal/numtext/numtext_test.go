package numtext

import "testing"

func TestGroup(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 123456: "123,456", 1_000_000: "1,000,000", -4321: "-4,321", -999: "-999"} {
		if got := Group(n); got != want {
			t.Errorf("Group(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 files", 1: "1 file", 2: "2 files", 105_252: "105,252 files"} {
		if got := Count(n, "file"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
