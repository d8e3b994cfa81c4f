package egress

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadPresets(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "egress")
	got, err := ReadPresets(path)
	if err != nil || len(got) != 0 {
		t.Fatalf("a missing file: %v, %v", got, err)
	}
	text := "# presets\n\nnpm = registry.npmjs.org:443\r\n" +
		"go = sum.golang.org:443, Proxy.Golang.org:443 , proxy.golang.org:443 # both\n" +
		"mirror-2=127.0.0.1:4873,[::1]:4873\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = ReadPresets(path)
	want := map[string][]string{
		"npm":      {"registry.npmjs.org:443"},
		"go":       {"proxy.golang.org:443", "sum.golang.org:443"},
		"mirror-2": {"127.0.0.1:4873", "[::1]:4873"},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	for _, bad := range []struct{ text, want string }{
		{"npm registry.npmjs.org:443", "line 1: want name = "},
		{"\nnpm = a.org:1\nnpm = b.org:1", "line 3: preset \"npm\" is defined twice"},
		{"Npm = a.org:1", "line 1: preset name \"Npm\""},
		{"1npm = a.org:1", "line 1: preset name"},
		{"n_pm = a.org:1", "line 1: preset name"},
		{strings.Repeat("a", 33) + " = a.org:1", "line 1: preset name"},
		{"npm =", "line 1: preset \"npm\": egress entry \"\""},
		{"npm = a.org:1,", "line 1: preset \"npm\": egress entry \"\""},
		{"npm = *.npmjs.org:443", "line 1"},
		{"npm = registry.npmjs.org.:443", "line 1"},
		{"npm = registry.npmjs.org", "line 1"},
		{"npm = ::1:443", "line 1"},
	} {
		if err := os.WriteFile(path, []byte(bad.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadPresets(path); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error with %q", bad.text, err, bad.want)
		}
	}
	if err := os.WriteFile(path, make([]byte, maxPresetsFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPresets(path); err == nil {
		t.Error("a file past the bound was read")
	}
	if _, err := ReadPresets(dir); err == nil {
		t.Error("a directory was read as presets")
	}
}

func TestExpand(t *testing.T) {
	presets := map[string][]string{"npm": {"registry.npmjs.org:443"}, "go": {"proxy.golang.org:443", "sum.golang.org:443"}}
	got, err := Expand([]string{"go", "Registry.NPMjs.org:443", "npm", "127.0.0.1:4873"}, presets)
	want := []string{"127.0.0.1:4873", "proxy.golang.org:443", "registry.npmjs.org:443", "sum.golang.org:443"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	if got, err := Expand(nil, presets); err != nil || got != nil {
		t.Errorf("nothing asked: %v, %v", got, err)
	}
	for _, bad := range []struct {
		asked   string
		presets map[string][]string
		want    string
	}{
		{"pip", presets, `"pip": no preset of that name (presets: go, npm)`},
		{"pip", nil, "no presets are defined"},
		{"example.com", presets, "presets: go, npm"},
		{"example.com:0", presets, "port"},
		{"*.example.com:443", presets, "wildcards"},
	} {
		if _, err := Expand([]string{bad.asked}, bad.presets); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error with %q", bad.asked, err, bad.want)
		}
	}
	var many []string
	for i := range 33 {
		many = append(many, "127.0.0.1:"+string(rune('1'+i/10))+string(rune('0'+i%10)))
	}
	if _, err := Expand(many, nil); err == nil || !strings.Contains(err.Error(), "cap of 32") {
		t.Errorf("33 entries: %v", err)
	}
}

// TestReadPresetsOperatorFile: the presets file is an operator's file
// (statedir.ReadOperatorFile): one writable by others, or a symlink (to
// a good file, even), is refused with an error that names it.
func TestReadPresetsOperatorFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("npm = registry.npmjs.org:443\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadPresets(good); err != nil || len(got) != 1 {
		t.Fatalf("a good file: %v, %v", got, err)
	}
	open := filepath.Join(dir, "open")
	if err := os.WriteFile(open, []byte("npm = registry.npmjs.org:443\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o666); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{open: "writable by others", link: link} {
		if got, err := ReadPresets(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, %v; want an error naming it (%q)", path, got, err, want)
		}
	}
}
