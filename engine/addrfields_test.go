package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// transportField matches a name that holds one transport kind's address
// or port: QUICAddr, TCPPort, quicAddr, TCPAddrs... Outside the transports
// an address is an addr.Addr of some kind, in a list.
var transportField = regexp.MustCompile(`(?i)^(quic|tcp)(addr|addrs|port|ports)$`)

// kindFields returns where f declares or uses such a struct field or
// method (a package's own types, as net.TCPAddr, are not fields; local
// variables and parameters are not either).
func kindFields(fset *token.FileSet, f *ast.File) []string {
	pkgs := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		pkgs[name] = true
	}
	var out []string
	found := func(n ast.Node, name string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+name)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.StructType:
			for _, fl := range n.Fields.List {
				for _, id := range fl.Names {
					if transportField.MatchString(id.Name) {
						found(id, id.Name)
					}
				}
			}
		case *ast.FuncDecl:
			if n.Recv != nil && transportField.MatchString(n.Name.Name) {
				found(n.Name, n.Name.Name)
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && pkgs[x.Name] {
				return true
			}
			if transportField.MatchString(n.Sel.Name) {
				found(n.Sel, n.Sel.Name)
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok && transportField.MatchString(k.Name) {
				found(k, k.Name)
			}
		}
		return true
	})
	return out
}

// TestNoTransportFieldsOutsideTransports: nothing outside
// engine/internal/transport/... names a transport kind's fields (issue
// 23): discovery, the engine, the app, the UI and the commands carry
// addresses by kind (package addr), so a new way to reach a device is one
// more kind, not one more field in a dozen files.
func TestNoTransportFieldsOutsideTransports(t *testing.T) {
	t.Parallel()
	root := ".."
	transports := filepath.Join("..", "engine", "internal", "transport")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == transports || strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		files++
		for _, where := range kindFields(fset, f) {
			t.Errorf("%s: a transport kind's field; use a list of addr.Addr", where)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 200 {
		t.Fatalf("looked at only %d files: is the walk still at the module's root?", files)
	}
}

// The check finds what it is there to find.
func TestKindFieldsFinds(t *testing.T) {
	t.Parallel()
	src := `package x
import "net"
type Target struct{ QUICAddr, TCPAddr string; Name string }
type Peer struct{ TCPPort int }
func (t Target) quicAddr() string { return t.QUICAddr }
func f(p Peer) (*net.TCPAddr, int) { _ = Target{TCPAddr: "h:1"}; return nil, p.TCPPort }
func g(quicAddr string) (tcpAddr string) { return quicAddr }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := kindFields(fset, f)
	var names []string
	for _, g := range got {
		names = append(names, g[strings.LastIndex(g, " ")+1:])
	}
	if want := "QUICAddr TCPAddr TCPPort quicAddr QUICAddr TCPAddr TCPPort"; strings.Join(names, " ") != want {
		t.Errorf("found %v, want %s", names, want)
	}
}
