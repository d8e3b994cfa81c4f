package aliasscan

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"warrant/wire"
)

// MaxNamed is how many aliased names a refusal lists; it gives the total
// beside them.
const MaxNamed = 10

// maxShown bounds one name in a sentence, so that ten of them stay well
// within the wire's cap on human sentences.
const maxShown = 240

// Check scans the workspace open at ws, with the rest of its writable
// scope open at scope (the workspace's cache), within MaxDuration, and
// answers the finished scan, or a *wire.Error with WORKSPACE_ALIASED:
// when a file in the workspace, of any kind but a directory, has a name
// outside the scope (the sentence names up to MaxNamed of its names
// relative to the workspace, the kind of any that is not a regular file,
// and the count); when the workspace or its cache holds a mount point
// (named); or when the scan could not finish (the sentence names the
// limit or the failure, and where). The submit driver calls it after
// identity resolution and before a lease is matched or an approval asked
// for, so a refusal consumes nothing.
func Check(ws *os.File, scope ...*os.File) (*Result, error) {
	res, err := Scan(ws, time.Now().Add(maxDuration), scope...)
	if err == nil && len(res.Aliased) > 0 {
		return nil, wire.Errorf(wire.CodeWorkspaceAliased, "%s", aliasedSentence(res))
	}
	if err == nil {
		return res, nil
	}
	where := "the workspace"
	unchecked := "the workspace could not be checked for hard links to files outside it: %v"
	smaller := "; run in a smaller workspace"
	var se *ScopeError
	if errors.As(err, &se) {
		where = "the workspace's cache"
		unchecked = "the workspace's cache could not be checked for the other names of files hard-linked into the workspace: %v"
		smaller = "; replace those links in the workspace with copies (uv: UV_LINK_MODE=copy) or prune the cache (broker caches prune, with no broker running)"
	}
	var me *MountError
	var le *LimitError
	switch {
	case errors.As(err, &me):
		return nil, wire.Errorf(wire.CodeWorkspaceAliased,
			"%s in %s is a mount point, through which the sandbox would write to another place or filesystem; %s must be one filesystem with no mounts inside it: unmount it",
			show(me.Name), where, where)
	case errors.As(err, &le):
		if le.Limit == LimitDuration {
			le.max = maxDuration.String()
		}
		return nil, wire.Errorf(wire.CodeWorkspaceAliased, unchecked+smaller, le)
	case errors.Is(err, ErrChanged):
		return nil, wire.Errorf(wire.CodeWorkspaceAliased, unchecked+"; try again", err)
	default:
		return nil, wire.Errorf(wire.CodeWorkspaceAliased, unchecked, err)
	}
}

func aliasedSentence(res *Result) string {
	names := res.Aliased
	n := len(names)
	shown := make([]string, 0, MaxNamed)
	for _, name := range names[:min(n, MaxNamed)] {
		s := show(name)
		if k, ok := res.kinds[name]; ok {
			s += " (" + kindWords(k) + ")"
		}
		shown = append(shown, s)
	}
	list := strings.Join(shown, ", ")
	if n > MaxNamed {
		list += fmt.Sprintf(" and %s more", grouped(n-MaxNamed))
	}
	if n == 1 {
		fix := "replace it with a copy or remove it"
		if len(res.kinds) > 0 {
			fix = "remove it"
		}
		return "1 file in the workspace is a hard link to a file with a name outside it, which the sandbox would write through: " +
			list + "; " + fix
	}
	fix := "replace them with copies or remove them"
	if len(res.kinds) > 0 {
		fix = "remove them, or replace the regular files among them with copies"
	}
	return grouped(n) + " files in the workspace are hard links to files with a name outside it, which the sandbox would write through: " +
		list + "; " + fix
}

// kindWords names a file type that is not a regular file or directory.
func kindWords(t uint32) string {
	switch t {
	case typeLnk:
		return "a symlink"
	case typeFifo:
		return "a FIFO"
	case typeSock:
		return "a socket"
	case typeChr:
		return "a character device"
	case typeBlk:
		return "a block device"
	}
	return fmt.Sprintf("a file of type %#o", t)
}

// show quotes a name for a sentence (control characters and invalid
// UTF-8 escaped), cut to maxShown bytes.
func show(name string) string {
	if name == "" {
		return "the workspace root"
	}
	if len(name) > maxShown {
		name = name[:maxShown] + "…"
	}
	return strconv.Quote(name)
}

// grouped writes n with thousands separators.
func grouped(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
