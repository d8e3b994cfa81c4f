package toolchain

import "strings"

// The parsers of the marker files discovery reads: each takes the whole
// file (at most maxFile bytes) and returns only what it can vouch for.

// defaultToolchain is the quoted value of default_toolchain at the top
// level of a rustup settings.toml (before any table), or "".
func defaultToolchain(settings string) string {
	for line := range strings.SplitSeq(settings, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			return ""
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(key) != "default_toolchain" {
			continue
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			return value[1 : len(value)-1]
		}
		return ""
	}
	return ""
}

// versionWords are the version names of a pyenv version file: its words,
// lines starting with "#" skipped.
func versionWords(file string) []string {
	var words []string
	for line := range strings.SplitSeq(file, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			words = append(words, strings.Fields(line)...)
		}
	}
	return words
}

// goVersionOf is the first line of a Go root's VERSION when it names a
// release or a development build ("go1.22.0", "devel go1.23-…") in at
// most 128 printable ASCII bytes.
func goVersionOf(file string) (string, bool) {
	line, _, _ := strings.Cut(file, "\n")
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "go1") && !strings.HasPrefix(line, "devel ") || len(line) > 128 {
		return "", false
	}
	for _, c := range []byte(line) {
		if c < 0x20 || c > 0x7e {
			return "", false
		}
	}
	return line, true
}

// javaVersionOf is JAVA_VERSION from a JDK's release file, when it is a
// name (validName).
func javaVersionOf(file string) (string, bool) {
	for line := range strings.SplitSeq(file, "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "JAVA_VERSION=")
		if !ok {
			continue
		}
		v = strings.Trim(v, "\"")
		return v, validName(v)
	}
	return "", false
}
