package protect

import (
	"strings"
	"testing"
)

// hooksPathOf is the last core.hooksPath data sets, as git reads it.
func hooksPathOf(data string) (string, bool) {
	v, set := "", false
	GitConfig([]byte(data), func(name, value string, ok bool) {
		if name == "core.hookspath" && ok {
			v, set = value, true
		}
	})
	return v, set
}

// TestGitConfigHooksPath: the cases git's config.c decides, each checked
// against `git config --file F --get core.hooksPath` on git 2.39.
func TestGitConfigHooksPath(t *testing.T) {
	for _, c := range []struct {
		data, want string
		set        bool
	}{
		{"[core]\n\thooksPath = a\n", "a", true},
		{"[CORE]\n\tHOOKSPATH=a", "a", true},
		{"[core] hooksPath = a # comment\n", "a", true},
		{"[core]\nhooksPath = \"a # not a comment\" ; comment\n", "a # not a comment", true},
		{"[core]\nhooksPath = a  \t b  \n", "a    b", true}, // each blank a space
		{"[core]\nhooksPath = a\\\nb\n", "ab", true},
		{"[core]\nhooksPath = \"a\\\\b\\\"c\"\n", "a\\b\"c", true},
		{"[core]\r\nhooksPath = a\r\n", "a", true},
		{"\xef\xbb\xbf[core]\nhooksPath = a\n", "a", true},
		{"[core]\nhooksPath = a\n[core]\nhooksPath = b\n", "b", true},
		{"[core \"x\"]\nhooksPath = a\n", "", false},
		{"[core.x]\nhooksPath = a\n", "", false},
		{"[corex]\nhooksPath = a\n", "", false},
		{"[core]\nhooksPathx = a\n", "", false},
		{"; [core]\n# hooksPath = a\n", "", false},
		{"[core]\nhooksPath\n", "", false},                          // a boolean: git refuses it as a path
		{"[core]\nhooksPath = a\n[bad\nhooksPath = b\n", "a", true}, // git stops at the bad line (and dies)
		{"[core]\nhooksPath = \"a\n", "", false},                    // an unterminated quote
		{"[core]\nhooksPath = a\\q\n", "", false},                   // an unknown escape
		{"hooksPath = a\n", "", false},                              // no section
	} {
		if got, set := hooksPathOf(c.data); got != c.want || set != c.set {
			t.Errorf("%q: %q %v, want %q %v", c.data, got, set, c.want, c.set)
		}
	}
}

// TestGitConfigIncludes: include.path and includeIf.*.path are seen with
// their subsection kept.
func TestGitConfigIncludes(t *testing.T) {
	var got []string
	GitConfig([]byte("[include]\n\tpath = a\n[includeIf \"gitdir:~/W/\"]\n\tpath = b\n"), func(name, value string, ok bool) {
		got = append(got, name+"="+value)
	})
	if strings.Join(got, ",") != "include.path=a,includeif.gitdir:~/W/.path=b" {
		t.Errorf("got %v", got)
	}
}

// FuzzGitConfig: the parser ends on any input, every value it reports
// is no longer than the input, and a prefix that ends a line (one not
// continued by a backslash) reports a prefix of what the whole reports:
// it never reads ahead of a line.
func FuzzGitConfig(f *testing.F) {
	for _, s := range []string{"[core]\n\thooksPath = a\n", "[core \"x\"]\nk = \"v\\\" ; x\"\n", "[include]\npath=~/x\r\n", "\xef\xbb\xbf[a]b", "[a]\nb = c\\\n d\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var all []string
		GitConfig(data, func(name, value string, _ bool) {
			if len(value) > len(data) || len(name) > len(data) {
				t.Fatalf("%q=%q from %d bytes", name, value, len(data))
			}
			all = append(all, name+"\x00"+value)
		})
		i := strings.LastIndexByte(string(data), '\n')
		if i < 0 || strings.HasSuffix(string(data[:i]), "\\") || strings.HasSuffix(string(data[:i]), "\\\r") {
			return
		}
		var head []string
		GitConfig(data[:i+1], func(name, value string, _ bool) { head = append(head, name+"\x00"+value) })
		if len(head) > len(all) {
			t.Fatalf("a prefix reported more: %q vs %q", head, all)
		}
		for k := range head {
			if head[k] != all[k] {
				t.Fatalf("a prefix reported %q, the whole %q", head[k], all[k])
			}
		}
	})
}
