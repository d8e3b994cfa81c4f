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

// Check scans the workspace open at ws within MaxDuration and answers
// the finished scan, or a *wire.Error with WORKSPACE_ALIASED: when a
// regular file in it has a name outside it (the sentence names up to
// MaxNamed of its names relative to the workspace, and the count), or
// when the scan could not finish (the sentence names the limit or the
// failure). The submit driver calls it after identity resolution and
// before a lease is matched or an approval asked for, so a refusal
// consumes nothing.
func Check(ws *os.File) (*Result, error) {
	res, err := Scan(ws, time.Now().Add(maxDuration))
	var le *LimitError
	switch {
	case errors.As(err, &le):
		if le.Limit == LimitDuration {
			le.max = maxDuration.String()
		}
		return nil, wire.Errorf(wire.CodeWorkspaceAliased,
			"the workspace could not be checked for hard links to files outside it: %v; run in a smaller workspace", le)
	case errors.Is(err, ErrChanged):
		return nil, wire.Errorf(wire.CodeWorkspaceAliased,
			"the workspace could not be checked for hard links to files outside it: %v; try again", err)
	case err != nil:
		return nil, wire.Errorf(wire.CodeWorkspaceAliased,
			"the workspace could not be checked for hard links to files outside it: %v", err)
	case len(res.Aliased) > 0:
		return nil, wire.Errorf(wire.CodeWorkspaceAliased, "%s", aliasedSentence(res.Aliased))
	}
	return res, nil
}

func aliasedSentence(names []string) string {
	n := len(names)
	shown := make([]string, 0, MaxNamed)
	for _, name := range names[:min(n, MaxNamed)] {
		shown = append(shown, show(name))
	}
	list := strings.Join(shown, ", ")
	if n > MaxNamed {
		list += fmt.Sprintf(" and %s more", grouped(n-MaxNamed))
	}
	if n == 1 {
		return "1 file in the workspace is a hard link to a file with a name outside it, which the sandbox would write through: " +
			list + "; replace it with a copy or remove it"
	}
	return grouped(n) + " files in the workspace are hard links to files with a name outside it, which the sandbox would write through: " +
		list + "; replace them with copies or remove them"
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
