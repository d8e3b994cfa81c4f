package darwin

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warrant/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/*.sb from the generator")

// defaultPolicy is the shape of the broker's default policy on macOS.
func defaultPolicy() wire.Policy {
	p := wire.Policy{
		ReadExec: []string{"/usr", "/bin", "/sbin", "/etc"},
		Devices:  []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"},
	}
	for _, path := range slices.Sorted(slices.Values(append(slices.Clone(p.ReadExec), p.Devices...))) {
		p.Pins = append(p.Pins, wire.PathPin{Path: path, Dev: 1, Ino: uint64(len(p.Pins) + 2)})
	}
	return p
}

func defaultSpec() Spec {
	return Spec{
		Policy:    defaultPolicy(),
		Workspace: "/Users/me/proj",
		Home:      "/Users/me/Library/Application Support/warrant/actions/a1/home",
		Tmp:       "/Users/me/Library/Application Support/warrant/actions/a1/tmp",
		Exec:      "/usr/bin/make",
	}
}

func goldenSpecs() map[string]Spec {
	extras := defaultSpec()
	extras.Policy.ReadExec = append(extras.Policy.ReadExec, "/opt/homebrew", "/Library/Developer/CommandLineTools")
	extras.Policy.ReadWrite = []string{"/Users/me/.cache/go-build", "/tmp/shared"}
	extras.Exec = "/opt/local/lib/go/bin/go"

	script := defaultSpec()
	script.Exec = "/opt/homebrew/Cellar/python@3.12/3.12.4/Frameworks/Python.framework/Versions/3.12/bin/python3.12"
	script.Script = "/Users/me/proj/tools/gen.py"

	odd := defaultSpec()
	odd.Workspace = `/Users/me/my "quoted" proj")(allow default)`
	odd.Policy.ReadWrite = []string{`/Users/me/back\slash\`, "/Users/me/Dév ñ 日本/x y", `/Users/me/")"`}
	odd.Exec = `/Users/me/bin/t"o\o'l`

	rootExec := defaultSpec()
	rootExec.Exec = "/tool"

	homeBin := defaultSpec()
	homeBin.Exec = "/Users/me/bin/tool"

	return map[string]Spec{
		"default": defaultSpec(), "extras": extras, "script": script,
		"odd_paths": odd, "exec_at_root": rootExec, "exec_in_home_bin": homeBin,
	}
}

func TestProfileGolden(t *testing.T) {
	for name, spec := range goldenSpecs() {
		t.Run(name, func(t *testing.T) {
			got, e := Profile(spec)
			if e != nil {
				t.Fatalf("Profile: %v", e)
			}
			file := filepath.Join("testdata", name+".sb")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			if got != string(want) {
				t.Errorf("profile differs from %s (rerun with -update after review):\n%s", file, got)
			}
		})
	}
}

// TestProfileGrants checks the facts the goldens must show, so that an
// -update cannot silently bless a profile that lost one.
func TestProfileGrants(t *testing.T) {
	specs := goldenSpecs()
	mustContain := map[string][]string{
		"default": {
			"(deny default)", "(deny network*)",
			"(allow process-exec\n  (literal \"/usr/bin/make\"))",
			"(allow signal (target same-sandbox))",
			"(subpath \"/private/etc\")",
			"(allow file-read* file-write*\n  (subpath \"/Users/me/proj\")",
			"(allow file-read* file-write-data\n  (literal \"/dev/null\")",
		},
		"script": {
			"(allow process-exec\n  (literal \"/opt/homebrew/Cellar/python@3.12/3.12.4/Frameworks/Python.framework/Versions/3.12/bin/python3.12\"))",
			"(literal \"/Users/me/proj/tools/gen.py\")",
			"(subpath \"/opt/homebrew/Cellar/python@3.12/3.12.4/Frameworks/Python.framework/Versions/3.12\")",
		},
		"extras": {
			"(subpath \"/opt/homebrew\")", "(subpath \"/private/tmp/shared\")",
			"(subpath \"/opt/local/lib/go\")",
		},
		"odd_paths": {
			`(subpath "/Users/me/my \"quoted\" proj\")(allow default)")`,
			`(subpath "/Users/me/back\\slash\\")`,
			`(subpath "/Users/me/\")\"")`,
			`(literal "/Users/me/bin/t\"o\\o'l")`,
			"(subpath \"/Users/me/Dév ñ 日本/x y\")",
		},
		"exec_in_home_bin": {"(subpath \"/Users/me/bin\")"},
	}
	mustNot := map[string][]string{
		"default":          {"process-exec\n  (literal \"/bin", "(allow network", "(allow default", "kern.proc"},
		"exec_at_root":     {"(subpath \"/\")"},
		"exec_in_home_bin": {"(subpath \"/Users/me\")"},
	}
	for name, spec := range specs {
		got, e := Profile(spec)
		if e != nil {
			t.Fatalf("%s: %v", name, e)
		}
		for _, s := range mustContain[name] {
			if !strings.Contains(got, s) {
				t.Errorf("%s: profile lacks %q", name, s)
			}
		}
		for _, s := range mustNot[name] {
			if strings.Contains(got, s) {
				t.Errorf("%s: profile contains %q", name, s)
			}
		}
		if strings.Count(got, "(allow process-exec") != 1 {
			t.Errorf("%s: want exactly one process-exec rule", name)
		}
	}
}

func TestProfileRefusesUnrepresentable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   func(*Spec)
		field string
	}{
		{"newline", func(s *Spec) { s.Workspace = "/Users/me/a\n(allow default)" }, "workspace"},
		{"tab", func(s *Spec) { s.Home = "/Users/me/a\tb" }, "home"},
		{"carriage return", func(s *Spec) { s.Tmp = "/Users/me/a\rb" }, "tmp"},
		{"DEL", func(s *Spec) { s.Exec = "/usr/bin/a\x7f" }, "executable"},
		{"NUL", func(s *Spec) { s.Script = "/a\x00b" }, "script"},
		{"invalid UTF-8", func(s *Spec) { s.Policy.ReadExec = []string{"/opt/\xff"} }, "policy.read_exec[0]"},
		{"relative", func(s *Spec) { s.Policy.ReadWrite = []string{"rel/dir"} }, "policy.read_write[0]"},
		{"unclean", func(s *Spec) { s.Policy.Devices = []string{"/dev/../etc/passwd"} }, "policy.devices[0]"},
		{"trailing slash", func(s *Spec) { s.Workspace = "/Users/me/proj/" }, "workspace"},
		{"empty", func(s *Spec) { s.Home = "" }, "home"},
		{"too long", func(s *Spec) { s.Tmp = "/" + strings.Repeat("a", maxSBPLPath) }, "tmp"},
		{"too long once under /private", func(s *Spec) { s.Tmp = "/tmp/" + strings.Repeat("a", maxSBPLPath-8) }, "tmp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSpec()
			tc.mod(&s)
			got, e := Profile(s)
			if e == nil {
				t.Fatalf("accepted; profile:\n%s", got)
			}
			if e.Code != wire.CodePathInvalid || !strings.HasPrefix(e.Message, tc.field+":") {
				t.Errorf("got %v, want PATH_INVALID naming %s", e, tc.field)
			}
			if got != "" {
				t.Errorf("a refusal returned a profile")
			}
		})
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/a b":    `"/a b"`,
		`/a"b`:    `"/a\"b"`,
		`/a\b`:    `"/a\\b"`,
		`/")"`:    `"/\")\""`,
		`/\"`:     `"/\\\""`,
		"/日本":     `"/日本"`,
		"/;(#|x)": `"/;(#|x)"`,
	} {
		if got := quote(in); got != want {
			t.Errorf("quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestRootSymlinksMapToPrivate(t *testing.T) {
	s := defaultSpec()
	s.Policy.ReadExec = []string{"/etc", "/etcetera", "/var/db/x", "/tmp"}
	got, e := Profile(s)
	if e != nil {
		t.Fatal(e)
	}
	for _, want := range []string{`(subpath "/private/etc")`, `(subpath "/etcetera")`, `(subpath "/private/var/db/x")`, `(subpath "/private/tmp")`} {
		if !strings.Contains(got, want) {
			t.Errorf("profile lacks %s", want)
		}
	}
	if strings.Contains(got, `"/etc"`) || strings.Contains(got, `"/private/etcetera"`) {
		t.Errorf("root symlink mapping is wrong:\n%s", got)
	}
}

func TestProfileDigest(t *testing.T) {
	a, b := profileDigest("(version 1)"), profileDigest("(version 1) ")
	if len(a) != 32 || string(a) == string(b) {
		t.Fatalf("Digest is not a SHA-256 of the profile text")
	}
}
