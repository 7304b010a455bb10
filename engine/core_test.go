package engine

import (
	"testing"

	"github.com/ferrydrop/ferry/engine/internal/core"
	"github.com/ferrydrop/ferry/engine/wire"
)

// The core's limits on an offer are Ferry's wire limits: a decision carries
// the core's refusals, and a text the core takes fits in a wire offer. The
// core may not import wire (TestProtocolsDoNotImportEachOther), so they are
// written twice and checked here.
func TestCoreLimitsAreTheWire(t *testing.T) {
	for _, c := range []struct {
		name       string
		core, wire int
	}{
		{"MaxTextLen", core.MaxTextLen, wire.MaxTextLen},
		{"MaxRefusals", core.MaxRefusals, wire.MaxRefusals},
		{"MaxRefusalLen", core.MaxRefusalLen, wire.MaxRefusalLen},
		{"ManifestSlack", core.ManifestSlack, wire.MaxMessage},
	} {
		if c.core != c.wire {
			t.Errorf("core's %s is %d, the wire's %d", c.name, c.core, c.wire)
		}
	}
}
