package app

import "testing"

func TestNameFor(t *testing.T) {
	for _, tc := range []struct{ full, login, kind, want string }{
		{"Alice Smith,,,", "alice", "laptop", "Alice Smith's laptop"},
		{"Alice", "alice", "desktop", "Alice's desktop"},
		{"", "alice", "desktop", "alice's desktop"},
		{"  ", `HOST\bob`, "", "bob's computer"},
		{"", "root", "laptop", ""},
		{"", "", "laptop", ""},
	} {
		if got := nameFor(tc.full, tc.login, tc.kind); got != tc.want {
			t.Errorf("nameFor(%q, %q, %q) = %q, want %q", tc.full, tc.login, tc.kind, got, tc.want)
		}
	}
}
