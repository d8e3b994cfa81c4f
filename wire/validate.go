package wire

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"warrant/internal/closed"
)

// Size caps for text fields. The request caps are docs/architecture.md §2.1.
const (
	MaxArgs       = 256       // argv elements, excluding argv[0]
	MaxArgBytes   = 32 << 10  // one argv element
	MaxArgvBytes  = 256 << 10 // all argv elements together
	MaxEnvVars    = 64        // environment entries passed to a target
	maxName       = 256       // ids, handles, env names, enum-like text
	maxPath       = 4096      // PATH_MAX
	maxText       = 4096      // human sentences
	maxOutputText = 384 << 10 // one projected output stream
	MaxPaths      = 64        // entries in one policy path list
	maxEntries    = 512       // policy.read_entries
	maxExcluded   = 256       // policy.excluded
	MaxList       = 512       // entries in one listing page
	// MaxGoalJSON bounds a goal document (JSON text), and MaxGoalView a
	// goal's view: its document and a verdict, which the document's own
	// bounds (broker/internal/goals) keep under it, within the frame cap.
	MaxGoalJSON = 64 << 10
	MaxGoalView = 900 << 10
)

// checkText rejects NUL bytes, invalid UTF-8 and text over max bytes. NUL
// is rejected everywhere because any text may end up in argv, the
// environment or a path, where C truncates at it.
func checkText(field, s string, max int) error {
	switch {
	case len(s) > max:
		return fmt.Errorf("%s: %d bytes exceeds the cap of %d", field, len(s), max)
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%s: contains a NUL byte", field)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s: invalid UTF-8", field)
	}
	return nil
}

// checkName is checkText for a required identifier.
func checkName(field, s string) error {
	if s == "" {
		return fmt.Errorf("%s: empty", field)
	}
	return checkText(field, s, maxName)
}

// at names the element i of the list field in err, which a check made
// with an empty field name (": …", or ".name: …" for a member): a valid
// list formats no names.
func at(err error, field string, i int) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s[%d]%w", field, i, err)
}

// checkAbs requires a clean absolute path.
func checkAbs(field, p string) error {
	if err := checkText(field, p, maxPath); err != nil {
		return err
	}
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("%s: %q is not a clean absolute path", field, p)
	}
	return nil
}

// checkAbsList applies checkAbs to every entry of a list of at most
// MaxPaths.
func checkAbsList(field string, ps []string) error {
	return checkAbsCap(field, ps, MaxPaths)
}

// checkAbsCap applies checkAbs to every entry of a list of at most max.
func checkAbsCap(field string, ps []string, max int) error {
	if len(ps) > max {
		return fmt.Errorf("%s: %d entries exceeds the cap of %d", field, len(ps), max)
	}
	for i, p := range ps {
		if err := at(checkAbs("", p), field, i); err != nil {
			return err
		}
	}
	return nil
}

// CheckRelPath reports whether p is a workspace-relative directory path
// that cannot escape textually: "." or a clean relative path with no ".."
// component. It is a first filter only; the kernel check is openat2 with
// RESOLVE_BENEATH by fd (Linux) or O_NOFOLLOW_ANY per component (macOS).
func CheckRelPath(p string) error {
	if err := checkText("cwd", p, maxPath); err != nil {
		return err
	}
	switch {
	case p == "":
		return fmt.Errorf("cwd: empty (use \".\" for the workspace root)")
	case path.IsAbs(p):
		return fmt.Errorf("cwd: %q is absolute; it must be relative to the workspace", p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("cwd: %q leaves the workspace; the cwd must be a directory inside it", p)
	case path.Clean(p) != p:
		if c := path.Clean(p); c != ".." && !strings.HasPrefix(c, "../") {
			return fmt.Errorf("cwd: %q is not in its plain form (no \"//\", \".\" or \"..\" parts); write it as %q", p, c)
		}
		return fmt.Errorf("cwd: %q leaves the workspace; the cwd must be a directory inside it", p)
	}
	return nil
}

// TrimCwd drops the trailing slashes of a cwd ("sub/" is what shell
// completion types, and names the same directory as "sub"), so that both
// spellings are one identity. Nothing else is rewritten: "./sub", "a//b"
// and "a/../b" stay as they are, for CheckRelPath to refuse.
func TrimCwd(p string) string {
	if t := strings.TrimRight(p, "/"); t != "" {
		return t
	}
	return p
}

// WorkspaceExecutable reports whether a requested executable names a
// workspace executable: a relative path with a slash (./gradlew,
// .venv/bin/python), resolved beneath the workspace root rather than on
// the sanitized PATH. The broker's admission has checked that it is clean
// and holds no "..".
func WorkspaceExecutable(requested string) bool {
	return strings.Contains(requested, "/") && !path.IsAbs(requested)
}

// checkArgs applies the argv caps of docs/architecture.md §2.1 to the arguments
// after argv[0]; first is the index of args[0] in argv, for messages.
func checkArgs(field string, args []string, first int) error {
	if len(args) > MaxArgs {
		return fmt.Errorf("%s: %d arguments exceeds the cap of %d", field, len(args), MaxArgs)
	}
	total := 0
	for i, a := range args {
		if err := at(checkText("", a, MaxArgBytes), field, first+i); err != nil {
			return err
		}
		total += len(a)
	}
	if total > MaxArgvBytes {
		return fmt.Errorf("%s: %d bytes in total exceeds the cap of %d", field, total, MaxArgvBytes)
	}
	return nil
}

// checkEnum rejects the zero value and anything beyond the closed set.
func checkEnum[E namedEnum](e E) error {
	if !closed.Valid(e.names(), e) {
		return fmt.Errorf("%T: invalid value %d", e, uint8(e))
	}
	return nil
}

// checkDigest requires a SHA-256 digest.
func checkDigest(field string, d []byte) error {
	if len(d) != 32 {
		return fmt.Errorf("%s: %d bytes, want a 32-byte SHA-256 digest", field, len(d))
	}
	return nil
}

// checkLen bounds the length of a list.
func checkLen(field string, n, max int) error {
	if n > max {
		return fmt.Errorf("%s: %d entries exceeds the cap of %d", field, n, max)
	}
	return nil
}

// checkPins requires at most max pins of clean absolute paths, sorted by
// path, each once.
func checkPins(field string, pins []PathPin, max int) error {
	err := checkLen(field, len(pins), max)
	for i := 0; err == nil && i < len(pins); i++ {
		err = at(checkAbs(".path", pins[i].Path), field, i)
		if err == nil && i > 0 && pins[i-1].Path >= pins[i].Path {
			err = fmt.Errorf("%s: not sorted by path, or %q twice", field, pins[i].Path)
		}
	}
	return err
}

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
