package identity

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// pathProblem says in the user's words why a path could not be opened
// the way admission opens it (by descriptor, following no symlink and, for
// the cwd, crossing no mount). The error itself is kept as the refusal's
// Detail (wire.Explain), which the CLI shows under --debug.
func pathProblem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "does not exist"
	case errors.Is(err, syscall.ELOOP):
		return "is a symbolic link or has one on its way, and warrant follows none"
	case errors.Is(err, syscall.EXDEV):
		return "is on another mount than the workspace, and warrant crosses none"
	case errors.Is(err, syscall.ENOTDIR):
		return "is not a directory, or a part of its path is not"
	case errors.Is(err, fs.ErrPermission):
		return "cannot be reached: permission denied"
	}
	return "cannot be opened"
}

// chainProblem is pathProblem for a path whose symlinks are followed and
// recorded (resolveChain, resolveBeneath): there ELOOP means a loop.
func chainProblem(err error) string {
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Sprintf("is a loop of symbolic links, or a chain of more than %d", maxHops)
	}
	return pathProblem(err)
}

// cwdFix is what to do about a cwd that could not be opened beneath the
// workspace.
func cwdFix(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "create it, or pass --cwd an existing directory, relative to the workspace"
	case errors.Is(err, syscall.ELOOP):
		return "pass --cwd the real directory, relative to the workspace, rather than a link to it"
	case errors.Is(err, syscall.EXDEV):
		return "the cwd must be on the workspace's own file system"
	}
	return "pass --cwd a directory inside the workspace, relative to it"
}
