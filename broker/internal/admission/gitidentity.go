package admission

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"warrant/broker/internal/protect"
	"warrant/wire"
)

// An action's HOME is private and new, so git finds no identity there and
// `git commit` fails ("Author identity unknown"). The broker gives it the
// operator's: at start it reads user.name and user.email from the
// operator's global git config as git finds it in the broker's
// environment — $GIT_CONFIG_GLOBAL alone when it is set, else
// $XDG_CONFIG_HOME/git/config (or ~/.config/git/config) and then
// ~/.gitconfig, a later value taking the place of an earlier one. It
// follows no include, and reads no other key: aliases, core.fsmonitor,
// hooks, credential helpers and signing stay the operator's. A file git
// would refuse (a bad config line), a value wire.GitIdentity.Check
// refuses, or only one of the two keys gives the actions no identity, and
// the broker logs why.
//
// The identity is part of the command identity (its git_identity): the
// card shows it, the fingerprint covers it, and the broker writes exactly
// it as HOME/.gitconfig of each action (WriteGitConfig), so what ran is
// what was approved.

// GitIdentity reads the operator's git identity from the config files
// environ points git at. It returns nil, and why unless there simply is
// none, when it gives none.
func GitIdentity(environ []string) (*wire.GitIdentity, string) {
	var name, email string
	for _, file := range gitGlobalFiles(environ) {
		b, err := readGitConfig(file)
		if err != nil {
			return nil, err.Error()
		}
		if b == nil {
			continue
		}
		if !protect.GitConfig(b, func(key, value string, set bool) {
			switch {
			case key == "user.name" && set:
				name = value
			case key == "user.email" && set:
				email = value
			}
		}) {
			return nil, fmt.Sprintf("%s has a line git would refuse", file)
		}
	}
	switch {
	case name == "" && email == "":
		return nil, ""
	case name == "" || email == "":
		return nil, "the git config sets only one of user.name and user.email"
	}
	g := &wire.GitIdentity{Name: name, Email: email}
	if err := g.Check(); err != nil {
		return nil, err.Error()
	}
	return g, ""
}

// gitGlobalFiles are the global config files git reads under environ, in
// its order.
func gitGlobalFiles(environ []string) []string {
	env := map[string]string{}
	set := map[string]bool{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k], set[k] = v, true
		}
	}
	if set["GIT_CONFIG_GLOBAL"] {
		if f := env["GIT_CONFIG_GLOBAL"]; filepath.IsAbs(f) {
			return []string{f}
		}
		return nil // "" reads none; a relative name is relative to a cwd the broker does not share
	}
	var files []string
	home := env["HOME"]
	if x := env["XDG_CONFIG_HOME"]; filepath.IsAbs(x) {
		files = append(files, filepath.Join(x, "git", "config"))
	} else if filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".config", "git", "config"))
	}
	if filepath.IsAbs(home) {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	return files
}

// readGitConfig reads a regular file of at most protect.MaxConfig bytes
// (following symlinks, as git does); a missing one reads as nil.
func readGitConfig(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the git config %s: %w", file, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the git config %s is not a regular file", file)
	}
	b, err := io.ReadAll(io.LimitReader(f, protect.MaxConfig+1))
	if err != nil {
		return nil, fmt.Errorf("read the git config %s: %w", file, err)
	}
	if len(b) > protect.MaxConfig {
		return nil, fmt.Errorf("the git config %s is larger than %d bytes", file, protect.MaxConfig)
	}
	return b, nil
}

// WriteGitConfig writes g as home/.gitconfig, new, 0600: its user.name
// and user.email and nothing else. g passed wire.GitIdentity.Check (the
// identity was decoded or built so), so each value is one line; it is
// quoted, with git's escapes for '\' and '"'.
func WriteGitConfig(home string, g *wire.GitIdentity) error {
	body := gitConfigOf(g)
	f, err := os.OpenFile(filepath.Join(home, ".gitconfig"), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("write the action's git identity: %w", err)
	}
	if _, err = f.WriteString(body); err == nil {
		err = f.Close()
	} else {
		f.Close()
	}
	if err != nil {
		return fmt.Errorf("write the action's git identity: %w", err)
	}
	return nil
}

// gitConfigOf is the .gitconfig that says g and nothing else.
func gitConfigOf(g *wire.GitIdentity) string {
	if err := g.Check(); err != nil {
		panic("admission: internal error: an unchecked git identity: " + err.Error())
	}
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return "[user]\n\tname = \"" + q.Replace(g.Name) + "\"\n\temail = \"" + q.Replace(g.Email) + "\"\n"
}
