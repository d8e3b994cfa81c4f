//go:build linux

package integration

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
)

// Registry fixtures an upstream serves, built by the test (nothing is
// downloaded): a blob, a git repository over dumb HTTP, an npm registry
// of one package and a PEP 503 index of one wheel. Each carries a mark
// the host reads back from what the target fetched.

// blobFixture serves /blob: n random bytes, then the mark.
func blobFixture(t testing.TB, u *upstream, n int, mark string) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	b = append(b, mark...)
	u.Write("blob", b)
	return b
}

// gitHostEnv is the environment of git on the host: no user or system
// configuration.
var gitHostEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null"}

// gitFixture serves /repo.git, a bare repository of one commit whose
// README holds the mark, for git's dumb HTTP protocol (plain files after
// `git update-server-info`).
func gitFixture(t testing.TB, u *upstream, mark string) {
	git, env := lookPath(t, "git"), gitHostEnv
	src := t.TempDir()
	writeTree(t, src, map[string]string{"README": mark + "\n"})
	hostRun(t, src, env, git, "init", "-q", "-b", "main")
	hostRun(t, src, env, git, "add", "README")
	hostRun(t, src, env, git, "-c", "user.name=Upstream", "-c", "user.email=upstream@example.invalid", "commit", "-q", "-m", mark)
	bare := filepath.Join(u.Root, "repo.git")
	hostRun(t, src, env, git, "clone", "-q", "--bare", src, bare)
	hostRun(t, bare, env, git, "update-server-info")
}

// npmPackage is the package the npm registry fixture serves.
const npmPackage = "egress-fixture"

// npmRegistry serves a registry of npmPackage 1.0.0, whose index.js
// exports the mark: its packument at /egress-fixture and its tarball,
// with the integrity npm checks. It returns the workspace files of a
// project that depends on it through that registry.
func npmRegistry(t testing.TB, u *upstream, mark string) map[string]string {
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	files := []struct{ name, body string }{
		{"package/package.json", fmt.Sprintf(`{"name": %q, "version": "1.0.0", "main": "index.js"}`+"\n", npmPackage)},
		{"package/index.js", fmt.Sprintf("module.exports = %q;\n", mark)},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	s512, s1 := sha512.Sum512(tgz.Bytes()), sha1.Sum(tgz.Bytes())
	tarball := "tarballs/" + npmPackage + "-1.0.0.tgz"
	u.Write(tarball, tgz.Bytes())
	doc, err := json.Marshal(map[string]any{
		"name": npmPackage, "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": npmPackage, "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{"tarball": u.URL + "/" + tarball,
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]), "shasum": hex.EncodeToString(s1[:])},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	u.Write(npmPackage, doc)
	return map[string]string{
		"package.json": fmt.Sprintf(`{"name": "egress-project", "version": "1.0.0", "private": true, "dependencies": {%q: "1.0.0"}}`+"\n", npmPackage),
		".npmrc":       "registry=" + u.URL + "/\nupdate-notifier=false\nfund=false\naudit=false\n",
	}
}

// pipPackage is the distribution the PEP 503 index fixture serves.
const pipPackage = "egress-fixture"

// pipIndex serves /simple/egress-fixture/, an index of one pure-Python
// wheel whose module egress_fixture holds the mark; it returns the
// module's source.
func pipIndex(t testing.TB, u *upstream, mark string) string {
	const dist = "egress_fixture-1.0.dist-info/"
	module := fmt.Sprintf("MARK = %q\n", mark)
	files := []struct{ name, body string }{
		{"egress_fixture/__init__.py", module},
		{dist + "METADATA", "Metadata-Version: 2.1\nName: " + pipPackage + "\nVersion: 1.0\n"},
		{dist + "WHEEL", "Wheel-Version: 1.0\nGenerator: warrant-integration\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var whl bytes.Buffer
	zw := zip.NewWriter(&whl)
	record := ""
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err == nil {
			_, err = w.Write([]byte(f.body))
		}
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(f.body))
		record += fmt.Sprintf("%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record += dist + "RECORD,,\n"
	w, err := zw.Create(dist + "RECORD")
	if err == nil {
		_, err = w.Write([]byte(record))
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	name := "egress_fixture-1.0-py3-none-any.whl"
	u.Write("packages/"+name, whl.Bytes())
	sum := sha256.Sum256(whl.Bytes())
	u.Write("simple/"+pipPackage+"/index.html", []byte(fmt.Sprintf(
		"<!DOCTYPE html>\n<html><body><a href=\"/packages/%s#sha256=%x\">%s</a></body></html>\n", name, sum, name)))
	return module
}
