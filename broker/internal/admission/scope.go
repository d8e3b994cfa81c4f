package admission

import (
	"errors"
	"os"

	"warrant/broker/internal/aliasscan"
	"warrant/broker/internal/identity"
	"warrant/internal/fsid"
	"warrant/wire"
)

// Scan is the alias scan of r's workspace (aliasscan.Check), with the
// read-write paths of its policy (the workspace's cache) opened as its
// writable scope beside it (openReadWrite): WORKSPACE_ALIASED when a
// file has a name outside them, or the scan cannot be made.
func Scan(r *identity.Resolved) (*aliasscan.Result, error) {
	id := r.Identity()
	scope, err := openReadWrite(&id.Policy)
	if err != nil {
		return nil, err
	}
	scanned, err := aliasscan.Check(r.Workspace(), scope...)
	closeAll(scope)
	return scanned, err
}

// openReadWrite opens, without following any symlink, each read-write
// path of pol (the workspace's cache), and requires each to be the
// directory its pin names: the alias scan counts the names found there
// as inside the writable scope, so it must count them in the very
// directory the sandbox will grant. A failure is WORKSPACE_ALIASED, like
// any scan that cannot be made.
func openReadWrite(pol *wire.Policy) ([]*os.File, error) {
	var fs []*os.File
	for _, p := range pol.ReadWrite {
		f, err := identity.OpenWorkspace(p)
		if err == nil {
			err = pinned(f, pol, p)
		}
		if err != nil {
			closeAll(fs)
			if f != nil {
				f.Close()
			}
			return nil, wire.Errorf(wire.CodeWorkspaceAliased,
				"the workspace's cache %s could not be checked for the other names of files hard-linked into the workspace: %v; try again", p, err)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

var errNotPinned = errors.New("it is not the directory the policy pinned")

// pinned fails unless f is the directory pol pins at p.
func pinned(f *os.File, pol *wire.Policy, p string) error {
	pin, ok := pol.Pin(p)
	if !ok {
		panic("admission: internal error: read-write path " + p + " without a pin")
	}
	id, err := fsid.Dir(int(f.Fd()), p)
	if err != nil {
		return err
	}
	if id.Dev != pin.Dev || id.Ino != pin.Ino {
		return errNotPinned
	}
	return nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}
