package toolchain

import (
	"fmt"
	"path/filepath"

	"warrant/wire"
)

// goRoot: a Go distribution (the go command, gofmt, pkg/tool/GOOS_GOARCH/
// compile…) lies in a root holding VERSION ("go1.22.0", first line) and
// src/runtime: /usr/local/go, ~/sdk/go1.22.0, a toolchain in the module
// cache. GOROOT names it, as the go command would find it from its own
// location, so a sealed copy of it finds its root too.
func goRoot(h *Host, paths []string) (*Found, string) {
	file := canonical(paths)
	dir := filepath.Dir(file)
	var root string
	switch {
	case filepath.Base(dir) == "bin":
		root = filepath.Dir(dir)
	case filepath.Base(filepath.Dir(dir)) == "tool" && filepath.Base(filepath.Dir(filepath.Dir(dir))) == "pkg":
		root = filepath.Dir(filepath.Dir(filepath.Dir(dir)))
	default:
		return nil, ""
	}
	version, ok := goVersion(root)
	if !ok {
		return nil, ""
	}
	f := found(wire.ToolchainGo, version, root, fmt.Sprintf("%s is in the Go root %s (VERSION says %s, src/runtime is there)", file, root, version))
	f.set(h, "GOROOT", root)
	return f, ""
}

// goVersion is the first line of root/VERSION when root is a Go root.
func goVersion(root string) (string, bool) {
	if !isDir(root, "src/runtime") {
		return "", false
	}
	b, err := readSmall(root, "VERSION")
	if err != nil {
		return "", false
	}
	return goVersionOf(string(b))
}

// jdk: a JDK or JRE (/usr/lib/jvm/NAME, /opt/jdk-21, macOS's
// …/Contents/Home) holds bin/ (and a JDK 8's jre/bin/) and a release
// file with JAVA_VERSION. JAVA_HOME names it.
func jdk(h *Host, paths []string) (*Found, string) {
	file := canonical(paths)
	dir := filepath.Dir(file)
	if filepath.Base(dir) != "bin" {
		return nil, ""
	}
	root := filepath.Dir(dir)
	version, ok := javaVersion(root)
	if !ok && filepath.Base(root) == "jre" {
		root = filepath.Dir(root)
		version, ok = javaVersion(root)
	}
	if !ok {
		return nil, ""
	}
	f := found(wire.ToolchainJDK, version, root, fmt.Sprintf("%s is in the JDK %s (its release file says JAVA_VERSION=%q)", file, root, version))
	f.set(h, "JAVA_HOME", root)
	return f, ""
}

// javaVersion is JAVA_VERSION from root/release, when root has one.
func javaVersion(root string) (string, bool) {
	b, err := readSmall(root, "release")
	if err != nil {
		return "", false
	}
	return javaVersionOf(string(b))
}
