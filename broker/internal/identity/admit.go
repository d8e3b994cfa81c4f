package identity

import (
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"warrant/wire"
)

// maxIDText bounds goal and session names.
const maxIDText = 256

// Admit checks the closed request shape of docs/architecture.md §2.1 before
// anything touches the filesystem. The wire decoder has already refused
// unknown fields and malformed encodings for requests that arrived on a
// socket; Admit repeats every check that matters so that in-process
// callers get the same answers, and gives each refusal its code:
// PATH_INVALID for the workspace and cwd, ARGUMENTS_INVALID for the rest.
//
// Argv elements are literal bytes. ";", "|", "$()", quotes and newlines
// are ordinary characters here and everywhere after: there is no shell.
//
// Admit first drops the cwd's trailing slashes (wire.TrimCwd): "sub/" and
// "sub" name one directory and bind one identity.
func Admit(s *wire.Submit) error {
	r := &s.Request
	r.Cwd = wire.TrimCwd(r.Cwd)
	if err := text("workspace", s.Workspace, 4096); err != "" {
		return wire.Errorf(wire.CodePathInvalid, "%s", err)
	}
	if !path.IsAbs(s.Workspace) || path.Clean(s.Workspace) != s.Workspace {
		return wire.Errorf(wire.CodePathInvalid, "the workspace %q must be a clean absolute path", s.Workspace)
	}
	if err := wire.CheckRelPath(r.Cwd); err != nil {
		return wire.Errorf(wire.CodePathInvalid, "%v", err)
	}
	if err := text("executable", r.Executable, 4096); err != "" {
		return wire.Errorf(wire.CodeArgumentsInvalid, "%s", err)
	}
	switch exe := r.Executable; {
	case exe == "":
		return wire.Errorf(wire.CodeArgumentsInvalid, "the executable is empty")
	case exe == "." || exe == "..":
		return wire.Errorf(wire.CodeArgumentsInvalid, "the executable %q is not a program name", exe)
	case path.IsAbs(exe) && path.Clean(exe) != exe:
		return wire.Errorf(wire.CodeArgumentsInvalid, "the absolute executable %q is not a clean path", exe)
	case wire.WorkspaceExecutable(exe):
		if rel := strings.TrimPrefix(exe, "./"); rel == "" || rel == "." || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
			return wire.Errorf(wire.CodeArgumentsInvalid,
				"the workspace executable %q must be a clean path relative to the workspace root without \"..\" (like ./gradlew or .venv/bin/python); "+
					"otherwise name a program on the sanitized PATH or give a clean absolute path", exe)
		}
	}
	if len(r.Argv) > wire.MaxArgs {
		return wire.Errorf(wire.CodeArgumentsInvalid, "argv has %d elements; the cap is %d", len(r.Argv), wire.MaxArgs)
	}
	total := 0
	for i, a := range r.Argv {
		if err := text("argv element", a, wire.MaxArgBytes); err != "" {
			return wire.Errorf(wire.CodeArgumentsInvalid, "argv[%d]: %s", i, err)
		}
		total += len(a)
	}
	if total > wire.MaxArgvBytes {
		return wire.Errorf(wire.CodeArgumentsInvalid, "argv holds %d bytes in total; the cap is %d", total, wire.MaxArgvBytes)
	}
	if r.Profile < wire.ProfileShort || r.Profile > wire.ProfileLong {
		return wire.Errorf(wire.CodeArgumentsInvalid, "profile %d is not one of short, standard or long", uint8(r.Profile))
	}
	if err := text("goal", r.Goal, maxIDText); err != "" {
		return wire.Errorf(wire.CodeArgumentsInvalid, "%s", err)
	}
	if err := text("session", r.Session, maxIDText); err != "" {
		return wire.Errorf(wire.CodeArgumentsInvalid, "%s", err)
	}
	if err := wire.CheckEgressAsked(r.Egress); err != nil {
		return wire.Errorf(wire.CodeArgumentsInvalid, "%v", err)
	}
	return nil
}

// text returns a sentence if s is over max bytes, holds a NUL byte or is
// not valid UTF-8, and "" otherwise.
func text(field, s string, max int) string {
	switch {
	case len(s) > max:
		return field + " is longer than " + strconv.Itoa(max) + " bytes"
	case strings.IndexByte(s, 0) >= 0:
		return field + " contains a NUL byte"
	case !utf8.ValidString(s):
		return field + " is not valid UTF-8"
	}
	return ""
}
