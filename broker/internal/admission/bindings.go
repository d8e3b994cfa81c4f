package admission

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"warrant/broker/internal/statedir"
	"warrant/wire"
)

// maxBindingsFile bounds <state>/bindings.
const maxBindingsFile = 64 << 10

// maxBindingPath bounds one path of it (PATH_MAX).
const maxBindingPath = 4096

// Every executable runs in place by default (identity.Resolve): the
// installed file itself, through the descriptor the broker verified, so
// that a program that runs itself again (node --test's process.execPath,
// /proc/self/exe) finds itself. The sealed snapshot — a sealed copy with
// exactly the approved digest, which sees /memfd:… as its own path — is
// the operator's choice: per approval (`broker approve --binding
// sealed-snapshot`), or per executable in the bindings file.
//
// The bindings file (<state>/bindings, absent: none) is plain text, one
// absolute path a line, byte for byte (no quotes, escapes or trimming):
// an executable whose real path, or a symlink on the way to it, is listed
// defaults to the sealed snapshot. A path must be clean (path.Clean
// leaves it as it is), hold no control character and be listed once; empty lines, lines of blanks and
// lines starting with "#" are ignored. A malformed line is an error that
// names it, so the broker does not start. The file must be a regular file
// of the broker's uid that no one else may write.
//
// The binding is part of the identity: the card shows it, and the
// fingerprint covers it.

// sealedByDefault reports whether listed names exe: its real path or a
// symlink its resolution passed through.
func sealedByDefault(listed map[string]bool, exe *wire.Executable) bool {
	if listed[exe.File.Path] {
		return true
	}
	for _, link := range exe.Chain {
		if listed[link] {
			return true
		}
	}
	return false
}

// ReadBindings reads and checks the bindings file; a missing one
// lists nothing.
func ReadBindings(file string) (map[string]bool, error) {
	b, err := statedir.ReadOperatorFile("the bindings file", file, maxBindingsFile)
	if err != nil || b == nil {
		return nil, err
	}
	return parseBindingsFile(file, b)
}

// parseBindingsFile parses the bindings file's bytes b (file names it in
// errors): the set of paths listed, or an error naming the first bad line.
func parseBindingsFile(file string, b []byte) (map[string]bool, error) {
	listed := map[string]bool{}
	seen := map[string]int{}
	for i, line := range bytes.Split(b, []byte("\n")) {
		n, p := i+1, string(line)
		if strings.Trim(p, " \t") == "" || strings.HasPrefix(p, "#") {
			continue
		}
		switch {
		case strings.HasSuffix(p, "\r"):
			return nil, fmt.Errorf("%s line %d: ends in a carriage return; the file takes plain \\n line ends", file, n)
		case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return nil, fmt.Errorf("%s line %d: holds a control character (a NUL, a tab, an escape…); no executable path listed here may", file, n)
		case len(p) > maxBindingPath:
			return nil, fmt.Errorf("%s line %d: is longer than %d bytes", file, n, maxBindingPath)
		case !path.IsAbs(p):
			return nil, fmt.Errorf("%s line %d: %s is not an absolute path; the file lists one absolute executable path a line", file, n, p)
		case strings.HasSuffix(p, " "):
			return nil, fmt.Errorf("%s line %d: ends in a blank; remove it (a path is taken byte for byte)", file, n)
		case path.Clean(p) != p:
			return nil, fmt.Errorf("%s line %d: %s is not a clean path; write %s", file, n, p, path.Clean(p))
		case seen[p] != 0:
			return nil, fmt.Errorf("%s line %d: %s is listed already on line %d", file, n, p, seen[p])
		}
		seen[p] = n
		listed[p] = true
	}
	return listed, nil
}
