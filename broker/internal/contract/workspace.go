package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// maxWorkspaceFile bounds package.json and the makefile.
const maxWorkspaceFile = 1 << 20

// names is a set of names read from the directory once per match
// (package.json's scripts, the makefile's targets), or why it could not be.
type names struct {
	read bool
	set  map[string]bool
	why  string
}

// member reports why s is not in the set that read finds in the
// directory.
func (m *matcher) member(n *names, read func(*os.File) (map[string]bool, string), s, missing string) string {
	if !n.read {
		n.read = true
		n.set, n.why = read(m.dir)
	}
	if n.why != "" {
		return n.why
	}
	if !n.set[s] {
		return fmt.Sprintf(missing, s)
	}
	return ""
}

// readSmall reads the regular file name in dir by descriptor, beneath
// it and through no symlink, up to maxWorkspaceFile bytes.
func readSmall(dir *os.File, name string) ([]byte, error) {
	f, err := openBeneath(dir, name, readFlags)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxWorkspaceFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxWorkspaceFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxWorkspaceFile)
	}
	return b, nil
}

func why(name string, err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return name + ": " + fsReason(err)
	}
	return err.Error()
}

// readScripts lists the names in package.json's "scripts" object whose
// value is a string: what `npm run NAME` runs. Keys are exact (npm's
// JSON.parse); of a key given twice the last counts, as in npm.
func readScripts(dir *os.File) (map[string]bool, string) {
	b, err := readSmall(dir, "package.json")
	if err != nil {
		return nil, why("package.json", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, "package.json is not a JSON object"
	}
	var scripts map[string]json.RawMessage
	if raw, ok := top["scripts"]; !ok || json.Unmarshal(raw, &scripts) != nil {
		return nil, `package.json has no "scripts" object`
	}
	out := map[string]bool{}
	for k, v := range scripts {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = true
		}
	}
	return out, ""
}

// makeTarget is what a declared target (and a make-target argument)
// looks like, ^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}$: no "%" (pattern
// rule), "$" (variable), "=" (assignment), "/" or leading ".".
func makeTarget(s string) bool { return nameOf(s, 128, alnum+"_", alnum+"_.+-") }

// readTargets reads the makefile GNU make would read in dir (the first
// of GNUmakefile, makefile, Makefile that exists) and lists the targets
// of its plain rule lines: in column 0, names then ":" (or "::") not
// followed by "=", outside define blocks and continuation lines. It does
// not follow include or evaluate conditionals, so it may list a target
// make then does not have; it never lists one that is not written there.
func readTargets(dir *os.File) (map[string]bool, string) {
	for _, name := range []string{"GNUmakefile", "makefile", "Makefile"} {
		b, err := readSmall(dir, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, why(name, err)
		}
		return ruleTargets(string(b)), ""
	}
	return nil, "there is no GNUmakefile, makefile or Makefile in the directory"
}

func ruleTargets(text string) map[string]bool {
	out := map[string]bool{}
	inDefine, continued := false, false
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		skip := continued
		continued = (len(line)-len(strings.TrimRight(line, `\`)))%2 == 1
		word, _, _ := strings.Cut(strings.TrimLeft(line, " \t"), " ")
		switch {
		case skip:
		case inDefine:
			inDefine = word != "endef"
		case word == "define" || strings.HasPrefix(line, "override define") || strings.HasPrefix(line, "export define"):
			inDefine = true
		default:
			names, rest, ok := strings.Cut(line, ":")
			if !ok || strings.HasPrefix(strings.TrimLeft(rest, ":"), "=") {
				continue
			}
			fields := strings.Fields(names)
			plain := len(fields) > 0 && names[0] != ' ' && names[0] != '\t'
			for _, f := range fields {
				plain = plain && makeTarget(f)
			}
			for _, f := range fields {
				if plain {
					out[f] = true
				}
			}
		}
	}
	return out
}
