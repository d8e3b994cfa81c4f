package darwin

import (
	"strings"
	"testing"
	"unicode/utf8"

	"warrant/internal/envpolicy"
	"warrant/wire"
)

func digest(b byte) []byte { return []byte(strings.Repeat(string(rune(b)), 32)) }

func file(p string, b byte) wire.FileIdentity {
	return wire.FileIdentity{Path: p, Dev: 1, Ino: uint64(b), Mode: 0o100755, Size: 10, SHA256: digest(b)}
}

func sampleSpawn() *wire.SpawnRequest {
	home, tmp := "/Users/me/state/actions/a1/home", "/Users/me/state/actions/a1/tmp"
	return &wire.SpawnRequest{
		Protocol:   wire.SpawnProtocol,
		Binding:    wire.SealedSnapshot,
		Argv:       []string{"make", "-j2", "all; rm -rf ~"},
		Env:        envpolicy.Build([]string{"LANG=C", "AWS_SECRET_ACCESS_KEY=x", "LD_PRELOAD=/x.so"}, nil, home, tmp),
		Workspace:  wire.DirIdentity{Path: "/Users/me/proj", Dev: 7, Ino: 100},
		Cwd:        wire.DirIdentity{Path: "src", Dev: 7, Ino: 101},
		Executable: file("/usr/bin/make", 'm'),
		Profile:    wire.ProfileShort,
		Policy:     defaultPolicy(),
		Home:       home,
		Tmp:        tmp,
	}
}

func TestAdmitPlan(t *testing.T) {
	req := sampleSpawn()
	p, e := admit(req, 3)
	if e != nil {
		t.Fatal(e)
	}
	if p.path != "/usr/bin/make" || strings.Join(p.argv, "|") != "make|-j2|all; rm -rf ~" {
		t.Errorf("plan: %q %q", p.path, p.argv)
	}
	env := strings.Join(p.env, "\n")
	for _, want := range []string{"PATH=" + envpolicy.SanitizedPath, "HOME=" + req.Home, "TMPDIR=" + req.Tmp, "TERM=dumb", "LANG=C"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "AWS_") || strings.Contains(env, "LD_PRELOAD") {
		t.Errorf("env leaks the broker's environment:\n%s", env)
	}
	want, _ := Profile(Spec{Policy: req.Policy, Workspace: req.Workspace.Path, Home: req.Home, Tmp: req.Tmp, Exec: "/usr/bin/make"})
	if p.profile != want {
		t.Errorf("plan profile is not the generator's profile for the request")
	}
}

func TestAdmitScript(t *testing.T) {
	req := sampleSpawn()
	req.Argv = []string{"gen.py", "--out", "x"}
	req.Executable = file("/Users/me/proj/tools/gen.py", 's')
	req.Interpreter = &wire.Interpreter{File: file("/usr/bin/env", 'i'), Arg: "-S"}
	p, e := admit(req, 3)
	if e != nil {
		t.Fatal(e)
	}
	if p.path != "/usr/bin/env" || strings.Join(p.argv, "|") != "/usr/bin/env|-S|/Users/me/proj/tools/gen.py|--out|x" {
		t.Errorf("script plan: %q %q", p.path, p.argv)
	}
	if !strings.Contains(p.profile, "(allow process-exec\n  (literal \"/usr/bin/env\"))") ||
		!strings.Contains(p.profile, "(literal \"/Users/me/proj/tools/gen.py\")") {
		t.Errorf("script profile does not pin the interpreter and the script:\n%s", p.profile)
	}
	req.Interpreter.Arg = ""
	if p, _ := admit(req, 3); strings.Join(p.argv, "|") != "/usr/bin/env|/Users/me/proj/tools/gen.py|--out|x" {
		t.Errorf("script without #! argument: %q", p.argv)
	}
	// A quote is representable in SBPL (it is escaped); only control
	// characters are refused (TestAdmitRefusals).
	req.Interpreter.File.Path = `/usr/bin/"py`
	if _, e := admit(req, 3); e != nil {
		t.Errorf("an interpreter path with a quote was refused: %v", e)
	}
}

func TestAdmitRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*wire.SpawnRequest)
		nfds int
		code wire.Code
	}{
		{"snapshots", func(r *wire.SpawnRequest) { r.Snapshots = true }, 4, wire.CodeArgumentsInvalid},
		{"too few fds", func(*wire.SpawnRequest) {}, 2, wire.CodeArgumentsInvalid},
		{"smuggled fd", func(*wire.SpawnRequest) {}, 4, wire.CodeArgumentsInvalid},
		{"dotdot cwd", func(r *wire.SpawnRequest) { r.Cwd.Path = "../outside" }, 3, wire.CodePathInvalid},
		{"absolute cwd", func(r *wire.SpawnRequest) { r.Cwd.Path = "/etc" }, 3, wire.CodePathInvalid},
		{"cwd on another device", func(r *wire.SpawnRequest) { r.Cwd.Dev = 8 }, 3, wire.CodePathInvalid},
		{"LD_PRELOAD", func(r *wire.SpawnRequest) {
			r.Env = append(r.Env, wire.EnvVar{Name: "LD_PRELOAD", Value: "/x.so"})
		}, 3, wire.CodeArgumentsInvalid},
		{"DYLD_INSERT_LIBRARIES", func(r *wire.SpawnRequest) {
			r.Env = append(r.Env, wire.EnvVar{Name: "DYLD_INSERT_LIBRARIES", Value: "/x.dylib"})
		}, 3, wire.CodeArgumentsInvalid},
		{"PATH changed", func(r *wire.SpawnRequest) {
			for i := range r.Env {
				if r.Env[i].Name == "PATH" {
					r.Env[i].Value = "/Users/me/evil:" + envpolicy.SanitizedPath
				}
			}
		}, 3, wire.CodeArgumentsInvalid},
		{"HOME missing", func(r *wire.SpawnRequest) { r.Env = r.Env[1:] }, 3, wire.CodeArgumentsInvalid},
		{"workspace with newline", func(r *wire.SpawnRequest) { r.Workspace.Path = "/Users/me/a\n(allow default)" }, 3, wire.CodePathInvalid},
		{"interpreter with newline", func(r *wire.SpawnRequest) {
			r.Interpreter = &wire.Interpreter{File: file("/usr/bin/py\n", 'i')}
		}, 3, wire.CodePathInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := sampleSpawn()
			tc.mod(req)
			p, e := admit(req, tc.nfds)
			if e == nil {
				t.Fatalf("admitted: %+v", p)
			}
			if e.Code != tc.code {
				t.Errorf("got %v, want %v", e, tc.code)
			}
		})
	}
}

func TestRefusedClipsDetail(t *testing.T) {
	long := strings.Repeat("日", 3000) // 9000 bytes
	r := refused(wire.Errorf(wire.CodePathInvalid, "%s", long))
	if r.Code != wire.CodePathInvalid || len(r.Detail) > maxDetail+len("…") || !utf8.ValidString(r.Detail) {
		t.Fatalf("detail not clipped on a UTF-8 boundary: %d bytes", len(r.Detail))
	}
	if _, err := wire.EncodeFrame(r); err != nil {
		t.Fatalf("clipped refusal does not encode: %v", err)
	}
	if short := refused(wire.Errorf(wire.CodeBusy, "busy")); short.Detail != "busy" {
		t.Errorf("short detail changed: %q", short.Detail)
	}
}
