package contract

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// check decides whether the argument s is a value v accepts. It returns
// the resolved path relative to the directory for the path types, or
// why s is refused.
func (m *matcher) check(v *value, s string) (rel, why string) {
	switch {
	case s == "":
		return "", "an empty argument is never accepted"
	case s[0] == '-':
		return "", `it begins with "-", so the program could read it as a flag`
	case len(s) > v.maxBytes() && v.Type != KindEnum && v.Type != KindInt:
		return "", fmt.Sprintf("it is longer than %d bytes", v.maxBytes())
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", "it holds a control character or invalid UTF-8"
	}
	switch v.Type {
	case KindEnum:
		if !slices.Contains(v.Values, s) {
			return "", "it is not one of " + strings.Join(v.Values, ", ")
		}
	case KindInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || s != strconv.FormatInt(n, 10) || n < *v.Min || n > *v.Max {
			return "", fmt.Sprintf("it is not a plain decimal integer from %d to %d", *v.Min, *v.Max)
		}
	case KindString:
		if !v.re.MatchString(s) {
			return "", "it does not match " + v.Pattern
		}
	case KindPath:
		return m.path(v.Access, s)
	case KindGoPackage:
		return m.goPackage(s)
	case KindPackageScript:
		return "", m.member(&m.scripts, readScripts, s, "package.json has no script %q")
	case KindMakeTarget:
		return "", m.member(&m.targets, readTargets, s, "the makefile declares no target %q (a plain \"name:\" rule line)")
	default:
		panic("contract: internal error: value type " + string(v.Type))
	}
	return "", ""
}

// cleanRel checks a path argument: relative, free of "..", glob and
// pathspec characters, in its plain form but for one leading "./",
// which it drops.
func cleanRel(s string) (string, string) {
	if strings.HasPrefix(s, "/") {
		return "", "it is an absolute path; only paths inside the workspace are accepted"
	}
	if strings.ContainsAny(s, `*?[\`) || strings.HasPrefix(s, ":") {
		return "", `it holds a glob or pathspec character (* ? [ \ or a leading ":"), which the program may expand`
	}
	r := strings.TrimPrefix(s, "./")
	if slices.Contains(strings.Split(r, "/"), "..") {
		return "", `it climbs out with ".."; only paths beneath the directory are accepted`
	}
	if r == "" || path.Clean(r) != r {
		return "", `it is not in its plain form (no "//", "." parts or trailing "/")`
	}
	return r, ""
}

// guard asks the caller's predicate about rel and each directory above
// it up to ".".
func (m *matcher) guard(rel string) string {
	for p := rel; ; p = path.Dir(p) {
		if m.protected(p) {
			return p + " is a protected path"
		}
		if p == "." {
			return ""
		}
	}
}

// path resolves a path argument beneath the directory by descriptor. A
// path to read exists and is a regular file or a directory; a path to
// write is a regular file, or names one that does not exist yet in a
// directory that does.
func (m *matcher) path(access, s string) (string, string) {
	rel, why := cleanRel(s)
	if why == "" {
		why = m.guard(rel)
	}
	if why != "" {
		return "", why
	}
	mode, err := m.lookup(rel)
	switch {
	case access == accessRead && err == nil && !mode.IsRegular() && !mode.IsDir():
		return "", "it is neither a regular file nor a directory"
	case access == accessWrite && err == nil && !mode.IsRegular():
		return "", "a path to write names a regular file, and this is not one"
	case access == accessWrite && err == nil && m.seen[rel].links != 1:
		return "", "it has other hard links, which may be outside the workspace"
	case access == accessWrite && errors.Is(err, fs.ErrNotExist) && rel != ".":
		if mode, err = m.lookup(path.Dir(rel)); err == nil && !mode.IsDir() {
			return "", "its parent is not a directory"
		}
	}
	if err != nil {
		return "", fsReason(err)
	}
	return rel, ""
}

// goPackage checks a Go package pattern: ".", "./...", "./DIR" or
// "./DIR/...", DIR a directory beneath the directory. It returns DIR.
func (m *matcher) goPackage(s string) (string, string) {
	const usage = `a Go package pattern here is ".", "./...", "./DIR" or "./DIR/..." with DIR a directory inside the workspace`
	dir := "."
	if s != "." && s != "./..." {
		r, ok := strings.CutPrefix(s, "./")
		r = strings.TrimSuffix(r, "/...")
		if !ok {
			if _, why := cleanRel(s); why != "" {
				return "", why
			}
		}
		if !ok || strings.HasPrefix(r, "./") || strings.Contains(r, "...") {
			return "", usage
		}
		var why string
		if dir, why = cleanRel(r); why != "" {
			return "", why
		}
		if dir == "." {
			return "", usage
		}
	}
	if why := m.guard(dir); why != "" {
		return "", why
	}
	mode, err := m.lookup(dir)
	if err != nil {
		return "", fsReason(err)
	}
	if !mode.IsDir() {
		return "", "it is not a directory"
	}
	return dir, ""
}

// lookup opens rel beneath the directory (beneath_*.go) and returns its
// type, caching the answer for the match.
func (m *matcher) lookup(rel string) (fs.FileMode, error) {
	if r, ok := m.seen[rel]; ok {
		return r.mode, r.err
	}
	var r lookedUp
	f, err := openBeneath(m.dir, rel, lookupFlags)
	if r.err = err; err == nil {
		var fi fs.FileInfo
		if fi, r.err = f.Stat(); r.err == nil {
			r.mode = fi.Mode()
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				r.links = uint64(st.Nlink)
			}
		}
		f.Close()
	}
	m.seen[rel] = r
	return r.mode, r.err
}

type lookedUp struct {
	mode  fs.FileMode
	links uint64
	err   error
}

// fsReason says in words why a path did not resolve.
func fsReason(err error) string {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return "a symbolic link is on its way, and contracts follow none"
	case errors.Is(err, syscall.EXDEV):
		return "it resolves outside the directory"
	case errors.Is(err, fs.ErrNotExist):
		return "it does not exist in the workspace"
	case errors.Is(err, syscall.ENOTDIR):
		return "a part of it is not a directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return "it could not be resolved: " + err.Error()
}
