package wire

import (
	"fmt"
	"testing"
)

func TestCodeOrderCoversEveryCode(t *testing.T) {
	if len(codeOrder) != len(codeErr) {
		t.Fatalf("codeOrder has %d codes, codeErr %d", len(codeOrder), len(codeErr))
	}
	for _, c := range codeOrder {
		if _, ok := codeErr[c]; !ok {
			t.Errorf("%q is in codeOrder but has no sentinel", c)
		}
	}
	both := fmt.Errorf("%w and %w", ErrIO, ErrCancelled)
	for range 20 {
		if got := CodeOf(both); got != CodeCancelled {
			t.Fatalf("CodeOf(io+cancelled) = %q, want cancelled", got)
		}
	}
}
