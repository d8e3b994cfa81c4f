package darwin

import (
	"crypto/sha256"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"warrant/wire"
)

// Spec is everything a Seatbelt profile is generated from: the action's
// policy (the same wire.Policy object the Linux launcher turns into
// Landlock rules) and the action's own paths.
type Spec struct {
	Policy    wire.Policy
	Workspace string // the verified workspace root
	Home      string // the action's private HOME
	Tmp       string // the action's private TMPDIR
	Exec      string // the file handed to execve: the executable, or a script's pinned interpreter
	Script    string // the "#!" script the interpreter reads, or ""
}

// maxSBPLPath is PATH_MAX on macOS. Longer paths cannot name a file there.
const maxSBPLPath = 1024

// Profile returns the deny-default SBPL profile for s. Every path becomes
// exactly one SBPL string literal; a path that cannot be represented
// safely (not absolute and clean, invalid UTF-8, a control character,
// longer than PATH_MAX) is refused with PATH_INVALID rather than altered.
func Profile(s Spec) (string, *wire.Error) {
	g := generator{}
	s = g.canonical(s)
	if g.err != nil {
		return "", g.err
	}
	rw := slices.Concat([]string{s.Workspace, s.Home, s.Tmp}, s.Policy.ReadWrite)
	code := slices.Concat(runtimePaths, s.Policy.ReadExec, s.Policy.ReadEntries)
	code = appendPrefix(code, rw, s.Exec)
	execs := []string{s.Exec}
	if s.Script != "" {
		execs = append(execs, s.Script)
	}
	var granted []string
	granted = append(granted, code...)
	granted = append(granted, runtimeData...)
	granted = append(granted, rw...)
	granted = append(granted, s.Policy.Devices...)
	granted = append(granted, execs...)

	b := &strings.Builder{}
	b.WriteString(header)
	rule(b, "process-exec", "literal", []string{s.Exec})
	b.WriteString(processRules)
	b.WriteString(";; Runtime code: read and map executable, never write.\n")
	rule(b, "file-read* file-map-executable", "subpath", code)
	b.WriteString(";; Runtime data: terminfo, locales, time zones.\n")
	rule(b, "file-read*", "subpath", runtimeData)
	b.WriteString(";; The approved program itself (and, for a script, the script).\n")
	rule(b, "file-read*", "literal", slices.Concat(execs, runtimeFiles))
	b.WriteString(";; The workspace, the action's HOME and TMPDIR, policy.read_write.\n")
	rule(b, "file-read* file-write*", "subpath", rw)
	if len(s.Policy.Devices) > 0 {
		b.WriteString(";; Character devices from policy.devices: data only.\n")
		rule(b, "file-read* file-write-data", "literal", s.Policy.Devices)
	}
	b.WriteString(";; Metadata of every ancestor of a granted path, for realpath and getcwd.\n")
	rule(b, "file-read-metadata", "literal", ancestors(granted))
	b.WriteString(sysctlRules)
	b.WriteString(machRules)
	b.WriteString(footer)
	return b.String(), nil
}

// profileDigest is the SHA-256 of a generated profile; Ready carries it as
// seatbelt_digest.
func profileDigest(profile string) []byte {
	d := sha256.Sum256([]byte(profile))
	return d[:]
}

type generator struct{ err *wire.Error }

// canonical checks every path of s and maps the macOS root symlinks
// (/etc, /tmp, /var → /private/…) to the paths Seatbelt matches: rules
// match the resolved path, so a rule on "/etc" would silently match
// nothing.
func (g *generator) canonical(s Spec) Spec {
	one := func(field, p string) string {
		for _, link := range []string{"/etc", "/tmp", "/var"} {
			if p == link || strings.HasPrefix(p, link+"/") {
				p = "/private" + p
				break
			}
		}
		// Checked after mapping: the mapped path is what reaches SBPL.
		if err := checkSBPLPath(p); err != nil && g.err == nil {
			g.err = wire.Errorf(wire.CodePathInvalid, "%s: %v", field, err)
		}
		return p
	}
	list := func(field string, ps []string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = one(fmt.Sprintf("%s[%d]", field, i), p)
		}
		return out
	}
	c := Spec{
		Policy: wire.Policy{
			ReadExec:       list("policy.read_exec", s.Policy.ReadExec),
			ReadEntries:    list("policy.read_entries", s.Policy.ReadEntries),
			ReadWrite:      list("policy.read_write", s.Policy.ReadWrite),
			Devices:        list("policy.devices", s.Policy.Devices),
			MinLandlockABI: s.Policy.MinLandlockABI,
		},
		Workspace: one("workspace", s.Workspace),
		Home:      one("home", s.Home),
		Tmp:       one("tmp", s.Tmp),
		Exec:      one("executable", s.Exec),
	}
	if s.Script != "" {
		c.Script = one("script", s.Script)
	}
	return c
}

// checkSBPLPath accepts exactly the paths quote can represent without
// ambiguity.
func checkSBPLPath(p string) error {
	switch {
	case len(p) > maxSBPLPath:
		return fmt.Errorf("%d bytes exceeds PATH_MAX (%d) on macOS", len(p), maxSBPLPath)
	case !utf8.ValidString(p):
		return fmt.Errorf("%q is not valid UTF-8", p)
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%q contains a control character, which this generator does not put in SBPL", p)
	case !path.IsAbs(p) || path.Clean(p) != p:
		return fmt.Errorf("%q is not a clean absolute path", p)
	}
	return nil
}

// quote returns p as one SBPL (Scheme) string literal. Inside a string
// only the backslash and the double quote are special to the reader; both
// are escaped with a backslash. Control characters never get here
// (checkSBPLPath refuses them), so no other escape is needed and UTF-8
// passes through as bytes, which is what Seatbelt compares paths against.
func quote(p string) string {
	var b strings.Builder
	b.Grow(len(p) + 2)
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		if c := p[i]; c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(p[i])
	}
	b.WriteByte('"')
	return b.String()
}

// rule writes one (allow ops (filter "path") …) form, or nothing for an
// empty list; duplicates are written once, in first-seen order.
func rule(b *strings.Builder, ops, filter string, ps []string) {
	seen := map[string]bool{}
	var lines []string
	for _, p := range ps {
		if seen[p] {
			continue
		}
		seen[p] = true
		if err := checkSBPLPath(p); err != nil {
			panic(fmt.Sprintf("darwin: internal error: unchecked path reached the profile: %v", err))
		}
		lines = append(lines, fmt.Sprintf("  (%s %s)", filter, quote(p)))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "(allow %s\n%s)\n", ops, strings.Join(lines, "\n"))
}

// appendPrefix adds the install prefix of the directory holding file to
// code unless a grant there already covers it. The prefix is the
// directory itself, or its parent when the directory is bin, sbin or
// libexec (…/bin/python3 needs …/lib) — but never "/" and never a
// directory that contains a read-write path, so ~/bin/tool does not open
// the whole home.
func appendPrefix(code, rw []string, file string) []string {
	dir := path.Dir(file)
	if dir == "/" {
		return code
	}
	if up := path.Dir(dir); up != "/" && slices.Contains([]string{"bin", "sbin", "libexec"}, path.Base(dir)) &&
		!slices.ContainsFunc(rw, func(p string) bool { return within(p, up) }) {
		dir = up
	}
	if slices.ContainsFunc(code, func(c string) bool { return within(dir, c) }) {
		return code
	}
	return append(code, dir)
}

// within reports whether p is dir or beneath it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// ancestors returns every proper ancestor directory of ps, each once,
// root first, in the order the paths are granted. The order follows the
// paths' structure, not their bytes, so it cannot be steered by a name.
func ancestors(ps []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range ps {
		var up []string
		for p != "/" {
			p = path.Dir(p)
			up = append(up, p)
		}
		for i := len(up) - 1; i >= 0; i-- {
			if !seen[up[i]] {
				seen[up[i]] = true
				out = append(out, up[i])
			}
		}
	}
	return out
}
