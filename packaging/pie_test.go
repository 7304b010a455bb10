package packaging

import (
	"debug/elf"
	"testing"
)

// checkLinuxBinaries checks how the packaged programs are linked: the app
// is a position-independent executable (what Debian and Fedora expect of
// a program: its own code is placed at random too; lintian's
// hardening-no-pie), the CLI a static executable, as
// packaging/linux/lintian-overrides says (a pure-Go PIE would need the
// system's dynamic loader, and the CLI runs on any Linux).
func checkLinuxBinaries(t *testing.T, app, cli string) {
	t.Helper()
	if typ, interp, pie := elfKind(t, app); typ != elf.ET_DYN || !interp || !pie {
		t.Errorf("%s: ELF type %v, program interpreter %v, DF_1_PIE %v; want a PIE: ET_DYN, with an interpreter and the flag (go build -buildmode=pie)", app, typ, interp, pie)
	}
	if typ, interp, _ := elfKind(t, cli); typ != elf.ET_EXEC || interp {
		t.Errorf("%s: ELF type %v, program interpreter %v; want a static ET_EXEC without one (CGO_ENABLED=0)", cli, typ, interp)
	}
}

// elfKind reads an ELF file's type, whether it asks for a program
// interpreter (PT_INTERP: the dynamic loader) and whether its dynamic
// section flags it a PIE (DF_1_PIE).
func elfKind(t *testing.T, path string) (typ elf.Type, interp, pie bool) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			interp = true
		}
	}
	if flags, err := f.DynValue(elf.DT_FLAGS_1); err == nil {
		for _, v := range flags {
			pie = pie || v&uint64(elf.DF_1_PIE) != 0
		}
	}
	return f.Type, interp, pie
}
