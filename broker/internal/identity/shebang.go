package identity

import (
	"bytes"
	"errors"
	"path"
	"strconv"
	"unicode/utf8"
)

// MaxShebang is how much of a file's head is read for its "#!" line: the
// Linux kernel's BINPRM_BUF_SIZE. A "#!" line must end within it.
const MaxShebang = 256

// Shebang is a parsed "#!" line.
type Shebang struct {
	Interpreter string // absolute, clean
	Arg         string // the optional single argument, as the kernel would pass it
}

// ParseShebang parses the head of a file (at most MaxShebang bytes are
// looked at). It returns nil, nil when the file is not a "#!" script. Like
// the kernel it splits the line once: the interpreter runs up to the first
// blank, and the rest, trimmed of blanks, is one argument. Unlike the
// kernel it refuses what it cannot pin honestly: a line that does not end
// within MaxShebang bytes, a relative or unclean interpreter path, NUL
// bytes and invalid UTF-8.
func ParseShebang(head []byte) (*Shebang, error) {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return nil, nil
	}
	if len(head) > MaxShebang {
		head = head[:MaxShebang]
	}
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 {
		return nil, errors.New("the #! line does not end within 256 bytes")
	}
	line := head[2:nl]
	if bytes.IndexByte(line, 0) >= 0 || !utf8.Valid(line) {
		return nil, errors.New("the #! line holds a NUL byte or invalid UTF-8")
	}
	line = bytes.Trim(line, " \t")
	interp, arg := line, []byte(nil)
	if i := bytes.IndexAny(line, " \t"); i >= 0 {
		interp, arg = line[:i], bytes.Trim(line[i:], " \t")
	}
	sb := &Shebang{Interpreter: string(interp), Arg: string(arg)}
	switch {
	case sb.Interpreter == "":
		return nil, errors.New("the #! line names no interpreter")
	case !path.IsAbs(sb.Interpreter) || path.Clean(sb.Interpreter) != sb.Interpreter:
		return nil, errors.New("the #! interpreter " + strconv.Quote(sb.Interpreter) + " is not a clean absolute path")
	}
	return sb, nil
}
