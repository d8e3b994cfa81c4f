package linux

import (
	"golang.org/x/sys/unix"

	"warrant/internal/fsid"
	"warrant/internal/retry"
	"warrant/wire"
)

// protectPaths performs step 6: given binds, it moves this thread into a
// private mount namespace that no mount propagates into or out of, makes
// each listed entry a mount point of itself (read-only where asked), and
// enters the approved cwd again through that namespace: the
// descriptors received and opened so far belong to the broker's
// namespace, where no bind is seen. An entry gone, replaced by a link or
// not a directory or regular file since the broker recorded it is left
// to that record. It needs CAP_SYS_ADMIN over its mount namespace (a
// root broker, or the user namespace the broker started the launcher in)
// and refuses without it: the broker asks only where it can.
func protectPaths(req *wire.SpawnRequest, cwd wire.DirIdentity, ready *wire.Ready) error {
	if len(req.Protect) == 0 {
		return nil
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "make a private mount namespace for the protected paths: %v", err)
	}
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return wire.Errorf(wire.CodeSandboxUnavailable, "keep the private mount namespace from the host's: %v", err)
	}
	ready.MountNS = true
	root, err := openNoLinks(unix.AT_FDCWD, req.Workspace.Path, unix.O_DIRECTORY, 0)
	if err != nil {
		return wire.Errorf(wire.CodeIdentityDrift, "open the workspace %s again in the mount namespace: %v", req.Workspace.Path, err)
	}
	defer unix.Close(root)
	if err := sameDir(root, req.Workspace); err != nil {
		return err
	}
	for _, b := range req.Protect {
		made, err := bindSelf(root, b)
		if err != nil {
			return wire.Errorf(wire.CodeSandboxUnavailable, "bind the protected %q: %v", b.Path, err)
		}
		if made {
			ready.Protected++
		}
	}
	fd, err := openNoLinks(root, cwd.Path, unix.O_DIRECTORY, unix.RESOLVE_BENEATH)
	if err != nil {
		return wire.Errorf(wire.CodeIdentityDrift, "the cwd %q no longer resolves beneath the workspace: %v", cwd.Path, err)
	}
	defer unix.Close(fd)
	if err := sameDir(fd, cwd); err != nil {
		return err
	}
	if err := unix.Fchdir(fd); err != nil {
		return wire.Errorf(wire.CodeIOFailed, "enter the cwd: %v", err)
	}
	return nil
}

// bindSelf makes the entry b names a mount point of itself, and reports
// whether there was such an entry to bind. The new mount is made detached
// (open_tree, with any mount beneath it, so that none is uncovered), given
// its flags throughout, then moved onto the entry, all by descriptor: no
// path is resolved twice. A read-only file with another name is left
// unbound: a write through that name would change it all the same.
func bindSelf(root int, b wire.ProtectBind) (bool, error) {
	fd, err := openNoLinks(root, b.Path, unix.O_NOFOLLOW, unix.RESOLVE_BENEATH)
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR, unix.ELOOP:
		return false, nil
	default:
		return false, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFDIR && (t != unix.S_IFREG || b.ReadOnly && st.Nlink != 1) {
		return false, nil
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return false, err
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if b.ReadOnly {
		attr.Attr_set |= unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return false, err
	}
	return true, unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// openNoLinks opens p from dir as an O_PATH descriptor without following
// any symlink or magic link, retrying EAGAIN as enterCwd does.
func openNoLinks(dir int, p string, flags uint64, resolve uint64) (fd int, err error) {
	how := &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | flags,
		Resolve: resolve | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	err = retry.EAGAIN(func() (err error) {
		fd, err = unix.Openat2(dir, p, how)
		return err
	})
	return fd, err
}

// sameDir requires fd to be the directory want names, by (dev, ino,
// birth time): the mount id differs in the new namespace.
func sameDir(fd int, want wire.DirIdentity) error {
	got, err := fsid.Dir(fd, want.Path)
	if err != nil {
		return wire.Errorf(wire.CodeIOFailed, "measure %q: %v", want.Path, err)
	}
	got.MntID = want.MntID
	if !got.Same(want) {
		return wire.Errorf(wire.CodeIdentityDrift, "%q is not the approved directory in the mount namespace", want.Path)
	}
	return nil
}
