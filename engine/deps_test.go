package engine

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNoGUIDependencies keeps the layering visible: the engine and discovery
// are plain Go, and the GUI is only one of their clients.
func TestNoGUIDependencies(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/ferrydrop/ferry/engine/...", "github.com/ferrydrop/ferry/discovery/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list returned only %v", deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "fyne.io/") || strings.HasPrefix(d, "github.com/ferrydrop/ferry/ui") || strings.HasPrefix(d, "github.com/ferrydrop/ferry/app") {
			t.Errorf("engine or discovery depends on %s", d)
		}
	}
}

// quicTransport is the only package of the module, outside tools under
// cmd/, that may import quic-go: the rest sees QUIC through package transport.
const quicTransport = "github.com/ferrydrop/ferry/engine/internal/transport/quic"

func TestQUICOnlyInItsTransport(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/ferrydrop/ferry/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if !strings.Contains(" "+imports+" ", " github.com/quic-go/quic-go") {
			continue
		}
		switch {
		case pkg == quicTransport:
			found = true
		case strings.HasPrefix(pkg, "github.com/ferrydrop/ferry/cmd/"):
		default:
			t.Errorf("%s imports quic-go; only %s may", pkg, quicTransport)
		}
	}
	if !found {
		t.Errorf("%s does not import quic-go: is the check still looking at the right package?", quicTransport)
	}
}

// TestNoEnvironmentOrTunablesBelowCmd: the engine, discovery and internal
// packages take their settings as options; only commands read FERRY_*
// variables, and no package keeps a mutable tunable (a package-level
// variable holding a number, a duration, a flag or an atomic).
func TestNoEnvironmentOrTunablesBelowCmd(t *testing.T) {
	t.Parallel()
	var files []string
	for _, dir := range []string{".", "../discovery", "../internal"} {
		filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			// Test-only packages (transporttest, testutil: their test
			// helpers run in a child test binary, told what to do by the
			// environment) are tests' code, not settings.
			if err == nil && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") &&
				!strings.Contains(p, "transporttest") && !strings.Contains(p, filepath.Join("internal", "testutil")) {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) < 20 {
		t.Fatalf("found only %d files", len(files))
	}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv" || sel.Sel.Name == "Environ") {
					t.Errorf("%s: reads the environment (os.%s); map it in cmd/ onto an option", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if notTunable[vs.Names[0].Name] {
					continue
				}
				if tunableType(vs.Type) || len(vs.Values) > 0 && tunableValue(vs.Values[0]) {
					t.Errorf("%s: package-level variable %s looks like a tunable; make it a config field or a constant",
						fset.Position(vs.Pos()), vs.Names[0].Name)
				}
			}
		}
	}
}

// notTunable lists package-level variables that look like tunables and are not.
var notTunable = map[string]bool{
	"labSeq": true, // internal/netlab: a counter that names labs apart
	"nsSeq":  true, // internal/netns: a counter that names test namespaces apart
	// engine/store: what the kernel answered once (linkat's AT_EMPTY_PATH
	// refused), learned at run time, not set by anyone.
	"emptyPathRefused": true,
	// internal/version: stamped by the linker (-ldflags -X), read only.
	"Version": true,
	"Commit":  true,
	"Date":    true,
}

func tunableType(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		switch e.Name {
		case "int", "int64", "uint64", "bool", "string", "float64":
			return true
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			return x.Name == "atomic" || x.Name == "time" && e.Sel.Name == "Duration"
		}
	}
	return false
}

func tunableValue(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.BinaryExpr:
		return tunableValue(e.X) || tunableValue(e.Y)
	case *ast.SelectorExpr:
		x, ok := e.X.(*ast.Ident)
		return ok && x.Name == "time" // time.Second and friends
	case *ast.CallExpr:
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "os" {
				return true
			}
		}
		if id, ok := e.Fun.(*ast.Ident); ok && strings.HasPrefix(id.Name, "env") {
			return true
		}
	}
	return false
}

// The engine's packages, by what they are to the layering of protocols: a
// protocol package speaks one protocol (Ferry's wire, LocalSend's HTTPS
// API, browser links); the core (package core) is the transfer every
// protocol shares; the rest are shared by all (addresses, peers, keys,
// safe writes, the transports). Every package directly under engine/ is
// named here, so that a new one is classified when it comes; those under
// engine/internal/ are shared unless named.
const module = "github.com/ferrydrop/ferry/"

var (
	protocolPackages = []string{"engine/wire", "engine/localsend", "engine/weblink"}
	corePackage      = "engine/internal/core"
	sharedPackages   = []string{"engine/addr", "engine/identity", "engine/merkle", "engine/peer", "engine/store",
		"engine/hostile", // a flooding Ferry peer for tests and ferry-bench, built on wire
		"engine/relay"}   // the server a user runs to reach paired devices beyond the LAN (ferry-cli relay), not a protocol of transfers
)

// TestProtocolsDoNotImportEachOther: a protocol package depends on the
// core, the transports and the store, never on another protocol nor on
// the engine's root (which glues them together); the core depends on no
// protocol. Ferry's wire session (engine/receive.go, send.go) and the glue
// of LocalSend and of links (engine/localsend*.go, weblink.go, links.go)
// live in the root and use the core.
func TestProtocolsDoNotImportEachOther(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"engine/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		deps[strings.TrimPrefix(f[0], module)] = f[1:]
	}
	for _, p := range append(append([]string{"engine", corePackage}, protocolPackages...), sharedPackages...) {
		if _, ok := deps[p]; !ok {
			t.Errorf("%s is not a package any more: is the check still looking at the right packages?", p)
		}
	}
	if !slices.Contains(deps["engine"], module+corePackage) {
		t.Errorf("the engine does not use %s", corePackage)
	}
	for _, v := range layeringViolations(deps) {
		t.Error(v)
	}
}

// layeringViolations applies the rule of TestProtocolsDoNotImportEachOther
// to a package list: deps maps a package (relative to the module) to its
// dependencies (import paths, as go list writes them).
func layeringViolations(deps map[string][]string) []string {
	protocolOf := func(pkg string) string {
		pkg = strings.TrimPrefix(pkg, module)
		for _, p := range protocolPackages {
			if pkg == p || strings.HasPrefix(pkg, p+"/") {
				return p
			}
		}
		return ""
	}
	var out []string
	for pkg, ds := range deps {
		own := protocolOf(pkg)
		switch {
		case own == "" && pkg != corePackage && !strings.HasPrefix(pkg, corePackage+"/"):
			if dir, _, nested := strings.Cut(strings.TrimPrefix(pkg, "engine/"), "/"); pkg != "engine" && dir != "internal" &&
				!slices.Contains(sharedPackages, "engine/"+dir) && !nested {
				out = append(out, fmt.Sprintf("%s is neither a protocol, the core nor shared: classify it in deps_test.go", pkg))
			}
			continue
		}
		what := "the core"
		if own != "" {
			what = "protocol package " + pkg
		}
		for _, d := range ds {
			switch p := protocolOf(d); {
			case d == module+"engine":
				out = append(out, fmt.Sprintf("%s depends on the engine's root", what))
			case p != "" && p != own:
				out = append(out, fmt.Sprintf("%s depends on protocol %s", what, strings.TrimPrefix(d, module)))
			}
		}
	}
	slices.Sort(out)
	return out
}

// The rule finds what it is for, in a planted package list.
func TestLayeringViolationsFinds(t *testing.T) {
	t.Parallel()
	m := func(s string) string { return module + s }
	for _, c := range []struct {
		name string
		deps map[string][]string
		want []string
	}{
		{"clean", map[string][]string{
			"engine":               {m("engine/internal/core"), m("engine/wire"), m("engine/localsend")},
			"engine/wire":          {m("engine/internal/errcode"), "io"},
			"engine/localsend":     {m("engine/internal/core"), m("engine/store"), m("engine/localsend/internal/x")},
			"engine/internal/core": {m("engine/internal/errcode"), m("engine/peer"), m("engine/store")},
			"engine/store":         {"os"},
		}, nil},
		{"a protocol imports another", map[string][]string{
			"engine/localsend": {m("engine/wire")},
			"engine/weblink":   {m("engine/localsend/x")},
		}, []string{"protocol package engine/localsend depends on protocol engine/wire",
			"protocol package engine/weblink depends on protocol engine/localsend/x"}},
		{"a protocol imports the engine", map[string][]string{
			"engine/weblink/sub": {m("engine")},
		}, []string{"protocol package engine/weblink/sub depends on the engine's root"}},
		{"the core imports a protocol", map[string][]string{
			"engine/internal/core": {m("engine/internal/errcode"), m("engine/wire")},
		}, []string{"the core depends on protocol engine/wire"}},
		{"the core imports the engine", map[string][]string{
			"engine/internal/core": {m("engine")},
		}, []string{"the core depends on the engine's root"}},
		{"an unclassified package", map[string][]string{
			"engine/carrierpigeon": {"io"},
			"engine/internal/x":    {m("engine/wire")},
		}, []string{"engine/carrierpigeon is neither a protocol, the core nor shared: classify it in deps_test.go"}},
	} {
		if got := layeringViolations(c.deps); !slices.Equal(got, c.want) {
			t.Errorf("%s: found %q, want %q", c.name, got, c.want)
		}
	}
}
