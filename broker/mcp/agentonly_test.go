package mcp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"warrant/broker/client"
)

// forbidden are the package-qualified names through which code could reach
// operator.sock: a full client or a dial of one, a socket of its own, an
// operator message to write on it, or a broker of its own.
var forbidden = map[string]map[string]bool{
	"broker": {"Open": true, "Config": true},
	"client": {"Client": true, "Dial": true, "SocketPaths": true},
	"net":    {"Dial": true, "DialTimeout": true, "DialUnix": true, "Dialer": true},
	"wire": {"Approve": true, "Deny": true, "Revoke": true, "List": true, "Resolve": true, "GoalSetState": true,
		"WriteFrame": true, "EncodeFrame": true, "OperatorChannel": true},
}

// TestNothingHereReachesTheOperator: the server holds a client.Agent,
// whose methods include no operator verb, and no code in this package
// names a way to another client, socket or operator message.
func TestNothingHereReachesTheOperator(t *testing.T) {
	at := reflect.TypeFor[*client.Agent]()
	if at.NumMethod() == 0 {
		t.Fatal("client.Agent has no methods: the check would prove nothing")
	}
	for i := range at.NumMethod() {
		switch name := at.Method(i).Name; name {
		case "Approve", "ApproveBinding", "Deny", "Revoke", "List", "Resolve", "SetGoalState":
			t.Errorf("client.Agent has the operator method %s", name)
		}
	}
	files, err := filepath.Glob("*.go")
	must(t, err)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, nil, 0)
		must(t, err)
		checked++
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && forbidden[pkg.Name][sel.Sel.Name] {
				t.Errorf("%s: %s.%s: the MCP server holds no operator power", fset.Position(sel.Pos()), pkg.Name, sel.Sel.Name)
			}
			return true
		})
	}
	if checked < 5 {
		t.Fatalf("checked %d files: the check would prove nothing", checked)
	}
}
