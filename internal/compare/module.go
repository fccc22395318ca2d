package compare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
)

// Module is servegate's module path.
const Module = "github.com/servegate/servegate"

// benchtestPkg is the package whose importers run scenarios.
const benchtestPkg = Module + "/benchtest"

// moduleRoot returns the root of the Go module dir is in.
func moduleRoot(ctx context.Context, dir string) (string, error) {
	gomod, err := command(ctx, dir, nil, "go", "env", "GOMOD")
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	if gomod == "" || gomod == os.DevNull {
		return "", inputErrorf("%s is not in a Go module: run servegate compare from the root of a module that requires %s", dir, Module)
	}
	return filepath.Dir(gomod), nil
}

// A Version is the servegate that a go.mod names: a version, and where
// a replace directive sends it.
type Version struct {
	// Version is the required version; "" for servegate itself.
	Version string `json:"version"`
	// Replace is the replacement as written, "" when there is none.
	Replace string `json:"replace,omitempty"`
	// Self says that the module is servegate itself.
	Self bool `json:"self,omitempty"`
}

// String says the version as a report writes it.
func (v Version) String() string {
	switch {
	case v.Self:
		return "servegate's own tree"
	case v.Replace != "":
		return v.Version + " => " + v.Replace
	}
	return v.Version
}

// goModFile is the part of `go mod edit -json` that compare reads.
type goModFile struct {
	Module struct{ Path string }
	Go     string
	// Require and Replace are the module's requirements and
	// replacements.
	Require []struct{ Path, Version string }
	Replace []struct {
		Old struct{ Path, Version string }
		New struct{ Path, Version string }
	}
}

// servegateVersion reads which servegate the go.mod of the module root
// dir names. A module that does not require servegate has none (ok
// false).
func servegateVersion(ctx context.Context, dir string) (v Version, ok bool, err error) {
	out, err := command(ctx, dir, nil, "go", "mod", "edit", "-json")
	if err != nil {
		return v, false, fmt.Errorf("read %s: %w", filepath.Join(dir, "go.mod"), err)
	}
	var f goModFile
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		return v, false, fmt.Errorf("read %s: %w", filepath.Join(dir, "go.mod"), err)
	}
	if f.Module.Path == Module {
		return Version{Self: true}, true, nil
	}
	for _, r := range f.Require {
		if r.Path == Module {
			v.Version, ok = r.Version, true
		}
	}
	for _, r := range f.Replace {
		if r.Old.Path == Module && (r.Old.Version == "" || r.Old.Version == v.Version) {
			v.Replace = strings.TrimSpace(r.New.Path + " " + r.New.Version)
		}
	}
	return v, ok, nil
}

// running returns the servegate version this program was built from,
// as its build information says: servegate's own tree, or the version
// and replacement of the go.mod that built it.
func running() (Version, bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Version{}, false
	}
	m := &bi.Main
	if m.Path != Module {
		m = nil
		for _, d := range bi.Deps {
			if d.Path == Module {
				m = d
			}
		}
	}
	return buildVersion(m)
}

// buildVersion is the Version of a module of the build information.
func buildVersion(m *debug.Module) (Version, bool) {
	if m == nil {
		return Version{}, false
	}
	if m.Version == "(devel)" && m.Replace == nil {
		return Version{Self: true}, true
	}
	v := Version{Version: m.Version}
	if r := m.Replace; r != nil {
		v.Replace = r.Path
		if r.Version != "" && r.Version != "(devel)" {
			v.Replace += " " + r.Version
		}
	}
	return v, true
}

// checkVersions applies compare's rule on servegate's versions: the
// servegate that runs compare is head's; base's may differ, and head's
// then judges both sides. It returns a note for the report, or why the
// comparison cannot run.
func checkVersions(tool, head, base Version, baseOK bool) (string, error) {
	if !head.Self && !tool.Self && tool != head {
		return "", inputErrorf("this servegate is %s but head's go.mod requires %s: run `go tool servegate compare` from head's module, which builds the version its go.mod names", tool, head)
	}
	switch {
	case !baseOK:
		return "base's go.mod does not require servegate", nil
	case base != head:
		return fmt.Sprintf("servegate's version differs: base's go.mod names %s, head's %s; head's version measures and judges both sides", base, head), nil
	}
	return "", nil
}

// A testPkg is a package whose tests run servegate scenarios.
type testPkg struct {
	// ImportPath is the package; Dir its directory in HEAD; Rel its
	// directory relative to the module root.
	ImportPath, Dir, Rel string
	// Binary is its test binary, once built.
	Binary string
}

// listPackage is the part of `go list -json` that compare reads.
type listPackage struct {
	ImportPath   string
	Dir          string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// findPackages lists the packages of patterns, in the module root dir,
// whose tests import benchtest.
func findPackages(ctx context.Context, dir string, patterns []string) ([]*testPkg, error) {
	args := append([]string{"list", "-e", "-json=ImportPath,Dir,TestImports,XTestImports,Error", "--"}, patterns...)
	out, err := command(ctx, dir, nil, "go", args...)
	if err != nil {
		return nil, inputErrorf("list the packages %s: %v", strings.Join(patterns, " "), err)
	}
	var pkgs []*testPkg
	var errs []error
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var p listPackage
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		if p.Error != nil {
			errs = append(errs, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err))
			continue
		}
		if !slices.Contains(p.TestImports, benchtestPkg) && !slices.Contains(p.XTestImports, benchtestPkg) {
			continue
		}
		rel, err := filepath.Rel(dir, p.Dir)
		if err != nil {
			return nil, fmt.Errorf("package %s: %w", p.ImportPath, err)
		}
		pkgs = append(pkgs, &testPkg{ImportPath: p.ImportPath, Dir: p.Dir, Rel: rel})
	}
	if len(errs) > 0 {
		return nil, &InputError{Err: errors.Join(errs...)}
	}
	if len(pkgs) == 0 {
		return nil, inputErrorf("no package of %s runs servegate scenarios: none has a test that imports %s", strings.Join(patterns, " "), benchtestPkg)
	}
	return pkgs, nil
}

// buildTests builds each package's test binary into dir, from the module
// root root; a package that does not build is bad input, with the
// compiler's message.
func buildTests(ctx context.Context, root, dir string, pkgs []*testPkg) error {
	for i, p := range pkgs {
		bin := filepath.Join(dir, fmt.Sprintf("%d-%s.test", i, filepath.Base(p.Dir)))
		if _, err := command(ctx, root, nil, "go", "test", "-c", "-o", bin, p.ImportPath); err != nil {
			return inputErrorf("build the tests of %s: %v", p.ImportPath, err)
		}
		p.Binary = bin
	}
	return nil
}
