package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
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
			if err == nil && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") &&
				!strings.Contains(p, "transporttest") {
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
