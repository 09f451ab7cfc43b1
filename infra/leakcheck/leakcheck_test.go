package leakcheck_test

import (
	"bytes"
	"errors"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tradesvc/infra/leakcheck"
)

// childEnv makes the test binary a demonstration run: "leak" leaves a goroutine running
// after its (no) tests, "clean" leaves none.
const childEnv = "LEAKCHECK_DEMO"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "leak":
		block := make(chan struct{})
		go leakedWorker(block) // never released: a leak
	case "clean":
	}
	leakcheck.Main(m)
}

// leakedWorker is the goroutine the demonstration run leaks; its name must appear in the
// failure so that whoever reads it knows what to stop.
func leakedWorker(block chan struct{}) { <-block }

func demo(t *testing.T, mode string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	default:
		t.Fatalf("run the demonstration: %v", err)
		return -1, ""
	}
}

// The checker's wiring: a test binary whose tests pass but leave a goroutine running exits
// non-zero (so `go test`, and with it `make test`, fails) and names the goroutine; the same
// binary without the leak exits 0.
func TestMainFailsARunThatLeavesAGoroutineRunning(t *testing.T) {
	code, stderr := demo(t, "leak")
	if code == 0 {
		t.Fatalf("a run that leaked a goroutine exited 0; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, "leakcheck: goroutines still running") || !strings.Contains(stderr, "leakedWorker") {
		t.Fatalf("the failure does not name the leaked goroutine:\n%s", stderr)
	}
	if code, stderr := demo(t, "clean"); code != 0 {
		t.Fatalf("a run without a leak exited %d:\n%s", code, stderr)
	}
}

// Every test package of the module checks for leaks from its TestMain (leakcheck.Main, or
// goleak.VerifyTestMain directly), so that no package's leak goes unnoticed. Packages built
// only with a tag (the fault tests) are checked by their own run.
func TestEveryTestPackageChecksForLeaks(t *testing.T) {
	root := moduleRoot(t)
	var unchecked []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return err
		}
		files := append(append([]string(nil), pkg.TestGoFiles...), pkg.XTestGoFiles...)
		if len(files) == 0 {
			return nil
		}
		if !checksLeaks(t, path, files) {
			rel, _ := filepath.Rel(root, path)
			unchecked = append(unchecked, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unchecked) > 0 {
		t.Fatalf("test packages without a leak check in TestMain (add func TestMain(m *testing.M) { leakcheck.Main(m) }):\n  %s",
			strings.Join(unchecked, "\n  "))
	}
}

// checksLeaks reports whether one of files declares a TestMain that calls leakcheck.Main or
// goleak.VerifyTestMain.
func checksLeaks(t *testing.T, dir string, files []string) bool {
	t.Helper()
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, filepath.Join(dir, f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "TestMain" || fn.Recv != nil || fn.Body == nil {
				continue
			}
			found := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "leakcheck" && sel.Sel.Name == "Main" ||
						x.Name == "goleak" && sel.Sel.Name == "VerifyTestMain") {
						found = true
					}
				}
				return !found
			})
			if found {
				return true
			}
		}
	}
	return false
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
