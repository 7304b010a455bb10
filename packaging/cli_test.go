package packaging

import (
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// Every CLI is a real executable for its OS and architecture, and the Linux
// one says which build it is.
func TestCLIBinaries(t *testing.T) {
	a := dist(t)
	for _, tc := range []struct {
		name  string
		check func(f *os.File) error
		want  string
	}{
		{"ferry-cli-VERSION-linux-amd64", elfMachine(elf.EM_X86_64), "x86-64 ELF"},
		{"ferry-cli-VERSION-linux-arm64", elfMachine(elf.EM_AARCH64), "arm64 ELF"},
		{"ferry-cli-VERSION-windows-amd64.exe", peMachine(pe.IMAGE_FILE_MACHINE_AMD64), "x86-64 PE"},
		{"ferry-cli-VERSION-windows-arm64.exe", peMachine(pe.IMAGE_FILE_MACHINE_ARM64), "arm64 PE"},
		{"ferry-cli-VERSION-darwin-amd64", machoCPU(macho.CpuAmd64), "x86-64 Mach-O"},
		{"ferry-cli-VERSION-darwin-arm64", machoCPU(macho.CpuArm64), "arm64 Mach-O"},
	} {
		target := strings.Replace(strings.TrimSuffix(strings.TrimPrefix(tc.name, "ferry-cli-VERSION-"), ".exe"), "-", "/", 1)
		t.Run(target, func(t *testing.T) {
			if !realApps && !slices.Contains(quickCLITargets, target) {
				t.Skip("built with FERRY_PACKAGE_FULL=1")
			}
			f, err := os.Open(a.path(tc.name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := tc.check(f); err != nil {
				t.Errorf("%s is not a %s: %v", tc.name, tc.want, err)
			}
		})
	}

	out := run(t, "", nil, a.path("ferry-cli-VERSION-linux-amd64"), "version", "--json")
	var v map[string]string
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version --json: %v: %q", err, out)
	}
	if v["version"] != a.version || v["commit"] != a.commit || v["date"] != a.date {
		t.Errorf("ferry-cli is stamped %s %s %s, want %s %s %s", v["version"], v["commit"], v["date"], a.version, a.commit, a.date)
	}
}

func elfMachine(m elf.Machine) func(*os.File) error {
	return func(f *os.File) error {
		e, err := elf.NewFile(f)
		if err != nil {
			return err
		}
		if e.Machine != m || e.Type != elf.ET_EXEC {
			return fmt.Errorf("machine %v, type %v", e.Machine, e.Type)
		}
		return nil
	}
}

func peMachine(m uint16) func(*os.File) error {
	return func(f *os.File) error {
		p, err := pe.NewFile(f)
		if err != nil {
			return err
		}
		if p.Machine != m || p.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE == 0 {
			return fmt.Errorf("machine %#x, characteristics %#x", p.Machine, p.Characteristics)
		}
		return nil
	}
}

func machoCPU(c macho.Cpu) func(*os.File) error {
	return func(f *os.File) error {
		m, err := macho.NewFile(f)
		if err != nil {
			return err
		}
		if m.Cpu != c || m.Type != macho.TypeExec {
			return fmt.Errorf("cpu %v, type %v", m.Cpu, m.Type)
		}
		return nil
	}
}
