package app

import "testing"

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		chassis string
		battery bool
		want    string
	}{
		{"10", false, "laptop"},
		{"9", false, "laptop"},
		{"3", false, "desktop"},
		{"3", true, "laptop"}, // a battery wins over a mislabelled chassis
		{"1", false, ""},      // "Other": a VM says so
		{"", true, "laptop"},
		{"", false, ""},
		{"junk", false, ""},
	} {
		if got := kindOf(tc.chassis, tc.battery); got != tc.want {
			t.Errorf("kindOf(%q, %v) = %q, want %q", tc.chassis, tc.battery, got, tc.want)
		}
	}
}
